// Bare OpenBLAS sgemm, C[M, N] = A·B over K (row-major): the strongest
// baseline (no bias, no activation). Prints the median seconds per call.
// usage: sgemm M K N repeats [layout]
//   nt (default): the forward's Y = X·Wᵀ, A = X [M, K], B = W [N, K];
//   nn: the backward's dX = dY·W, A = dY [M, K], B = W [K, N];
//   tn: the backward's dW = dYᵀ·X, A = dY [K, M], B = X [K, N].
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { RowMajor = 101, NoTrans = 111, Trans = 112 };
void cblas_sgemm(int order, int transA, int transB, int m, int n, int k,
                 float alpha, const float *a, int lda, const float *b, int ldb,
                 float beta, float *c, int ldc);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 5 && argc != 6)
    return 2;
  int m = atoi(argv[1]), k = atoi(argv[2]), n = atoi(argv[3]);
  int repeats = atoi(argv[4]);
  char layout[3] = "nt";
  if (argc == 6)
    snprintf(layout, sizeof layout, "%s", argv[5]);
  int transA = layout[0] == 't' ? Trans : NoTrans;
  int transB = layout[1] == 't' ? Trans : NoTrans;
  int lda = transA == Trans ? m : k, ldb = transB == Trans ? k : n;
  float *x = malloc(sizeof(float) * m * k), *w = malloc(sizeof(float) * n * k);
  float *y = malloc(sizeof(float) * m * n);
  for (long i = 0; i < (long)m * k; ++i)
    x[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
  for (long i = 0; i < (long)n * k; ++i)
    w[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
  cblas_sgemm(RowMajor, transA, transB, m, n, k, 1.0f, x, lda, w, ldb, 0.0f, y,
              n);
  double *seconds = malloc(sizeof(double) * repeats);
  for (int r = 0; r < repeats; ++r) {
    double start = now();
    cblas_sgemm(RowMajor, transA, transB, m, n, k, 1.0f, x, lda, w, ldb, 0.0f,
                y, n);
    seconds[r] = now() - start;
  }
  qsort(seconds, repeats, sizeof(double), compare);
  printf("%.9f\n", seconds[repeats / 2]);
  return 0;
}
