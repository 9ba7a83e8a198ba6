// erfc(z) = t * exp(-z^2 + p(t)) with t = 1 / (1 + z / 2), z >= 0: the Chebyshev fit of
// Numerical Recipes (fractional error below 1.2e-7), shared by the AVX2 erf and GELU (the
// AVX-512 GELU has a rational fit of its own). kErfcFit holds p's coefficients from the
// highest power down (Horner order).
#pragma once

namespace osprey {

constexpr int kErfcFitTerms = 10;
constexpr float kErfcFit[kErfcFitTerms] = {0.17087277f,  -0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f,
                                           -0.18628806f, 0.09678418f,  0.37409196f, 1.00002368f,  -1.26551223f};

}  // namespace osprey
