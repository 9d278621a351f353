// Peak fp32 FMA throughput of one core: 12 independent 8-wide FMA chains
// (enough to cover the FMA latency on two pipes), timed over many rounds.
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i)
    acc[i] = _mm256_set1_ps((float)i);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  const long rounds = 100000000;
  double best = 0;
  for (int trial = 0; trial < 5; ++trial) {
    double start = now();
    for (long r = 0; r < rounds; ++r)
      for (int i = 0; i < 12; ++i)
        acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    double gflops = rounds * 12.0 * 8 * 2 / (now() - start) / 1e9;
    if (gflops > best)
      best = gflops;
  }
  float sink = 0;
  for (int i = 0; i < 12; ++i)
    sink += _mm256_cvtss_f32(acc[i]);
  printf("%.2f %g\n", best, sink);
  return 0;
}
