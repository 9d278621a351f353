// The register tile of Lamina's AVX-512 matmul schedule, on operands that
// stay in L1: 8 rows × 2 vectors of 16 features (16 accumulators); per k,
// two loads of the packed W panel ([K, 32] contiguous), 8 broadcasts of x
// (8 rows of a row-major [8, K]) and 16 FMAs, then the tile is stored. This
// is the loop's own ceiling, without a real matmul's cache misses. Prints
// GFLOP/s (best of 5), or 0 on a host without AVX-512.
//   usage: microkernel [K]   (default 128: x 4 KiB, the W panel 16 KiB)
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

#ifdef __AVX512F__
static void tile(const float *x, const float *w, float *c, int k) {
  __m512 acc[8][2];
  for (int r = 0; r < 8; ++r)
    acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int i = 0; i < k; ++i) {
    __m512 w0 = _mm512_load_ps(w + 32 * i), w1 = _mm512_load_ps(w + 32 * i + 16);
    for (int r = 0; r < 8; ++r) {
      __m512 xr = _mm512_set1_ps(x[r * k + i]);
      acc[r][0] = _mm512_fmadd_ps(xr, w0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(xr, w1, acc[r][1]);
    }
  }
  for (int r = 0; r < 8; ++r) {
    _mm512_store_ps(c + 32 * r, acc[r][0]);
    _mm512_store_ps(c + 32 * r + 16, acc[r][1]);
  }
}
#endif

int main(int argc, char **argv) {
  int k = argc > 1 ? atoi(argv[1]) : 128;
#ifdef __AVX512F__
  float *x = aligned_alloc(64, sizeof(float) * 8 * k);
  float *w = aligned_alloc(64, sizeof(float) * 32 * k);
  float *c = aligned_alloc(64, sizeof(float) * 8 * 32);
  for (int i = 0; i < 8 * k; ++i)
    x[i] = (float)(i % 7) * 0.25f;
  for (int i = 0; i < 32 * k; ++i)
    w[i] = (float)(i % 5) * 0.5f;
  long tiles = 400000000L / k;
  double best = 0, check = 0;
  for (int trial = 0; trial < 5; ++trial) {
    double start = now();
    for (long t = 0; t < tiles; ++t) {
      tile(x, w, c, k);
      __asm__ volatile("" ::"r"(c) : "memory"); // keep every tile
    }
    double gflops = 2.0 * 8 * 32 * k * tiles / (now() - start) / 1e9;
    if (gflops > best)
      best = gflops;
    check += c[0];
  }
  printf("%.1f %g\n", best, check);
#else
  (void)k;
  printf("0 0\n");
#endif
  return 0;
}
