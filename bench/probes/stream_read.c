// Streaming read bandwidth of one core over a 256 MiB buffer (best of 5).
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
  const size_t n = (size_t)64 << 20; // floats
  float *data = aligned_alloc(64, n * sizeof(float));
  for (size_t i = 0; i < n; ++i)
    data[i] = (float)(i & 1023);
  double best = 0;
  __m256 sum = _mm256_setzero_ps();
  for (int trial = 0; trial < 5; ++trial) {
    double start = now();
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < n; i += 32) {
      s0 = _mm256_add_ps(s0, _mm256_load_ps(data + i));
      s1 = _mm256_add_ps(s1, _mm256_load_ps(data + i + 8));
      s2 = _mm256_add_ps(s2, _mm256_load_ps(data + i + 16));
      s3 = _mm256_add_ps(s3, _mm256_load_ps(data + i + 24));
    }
    double gbs = n * sizeof(float) / (now() - start) / 1e9;
    if (gbs > best)
      best = gbs;
    sum = _mm256_add_ps(sum, _mm256_add_ps(_mm256_add_ps(s0, s1),
                                           _mm256_add_ps(s2, s3)));
  }
  printf("%.2f %g\n", best, _mm256_cvtss_f32(sum));
  free(data);
  return 0;
}
