// RUN: lamina-opt %s --lamina-select-cpu-strategy=vector-bits=300 -verify-diagnostics

// expected-error @+1 {{vector-bits must be 256 (AVX2) or 512 (AVX-512); got 300}}
module {
}
