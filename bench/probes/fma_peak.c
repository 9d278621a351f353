// Peak fp32 FMA throughput of one core with the widest vectors the host has
// (compiled with -march=native): 16-wide on AVX-512, else 8-wide. 12
// independent FMA chains (enough to cover the FMA latency on two pipes),
// timed over many rounds. Prints GFLOP/s and the vector width in bits.
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

#ifdef __AVX512F__
typedef __m512 vec;
#define LANES 16
#define SPLAT _mm512_set1_ps
#define FMA _mm512_fmadd_ps
#define FIRST(v) _mm512_cvtss_f32(v)
#else
typedef __m256 vec;
#define LANES 8
#define SPLAT _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#define FIRST(v) _mm256_cvtss_f32(v)
#endif

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
  vec acc[12];
  for (int i = 0; i < 12; ++i)
    acc[i] = SPLAT((float)i);
  const vec a = SPLAT(0.999999f), b = SPLAT(1e-7f);
  const long rounds = 100000000;
  double best = 0;
  for (int trial = 0; trial < 5; ++trial) {
    double start = now();
    for (long r = 0; r < rounds; ++r)
      for (int i = 0; i < 12; ++i)
        acc[i] = FMA(acc[i], a, b);
    double gflops = rounds * 12.0 * LANES * 2 / (now() - start) / 1e9;
    if (gflops > best)
      best = gflops;
  }
  float sink = 0;
  for (int i = 0; i < 12; ++i)
    sink += FIRST(acc[i]);
  printf("%.2f %d %g\n", best, LANES * 32, sink);
  return 0;
}
