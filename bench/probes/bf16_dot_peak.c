// Peak bf16 dot-product throughput of one core (AVX512-BF16's vdpbf16ps:
// 16 lanes × 2 products each, 64 flops per instruction), compiled with
// -march=native. 12 independent accumulator chains, timed over many
// rounds. Prints GFLOP/s, or 0 where the CPU lacks the instruction.
#include <stdio.h>
#include <time.h>

#ifdef __AVX512BF16__
#include <immintrin.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i)
    acc[i] = _mm512_set1_ps((float)i);
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80); // 1.0
  const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3380); // 2^-24
  const long rounds = 100000000;
  double best = 0;
  for (int trial = 0; trial < 5; ++trial) {
    double start = now();
    for (long r = 0; r < rounds; ++r)
      for (int i = 0; i < 12; ++i)
        acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    double gflops = rounds * 12.0 * 64 / (now() - start) / 1e9;
    if (gflops > best)
      best = gflops;
  }
  float sink = 0;
  for (int i = 0; i < 12; ++i)
    sink += _mm512_cvtss_f32(acc[i]);
  printf("%.2f %g\n", best, sink);
  return 0;
}
#else
int main(void) {
  printf("0 0\n");
  return 0;
}
#endif
