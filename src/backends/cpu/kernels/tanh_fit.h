// tanh(x) = x P(x^2) / Q(x^2), a rational minimax fit (Eigen's float coefficients; about 3 ulp)
// on |x| <= kTanhClamp, where tanh rounds to +-1 in float beyond; below kTanhTiny tanh(x) is x.
// The AVX2 and AVX-512 kernels evaluate it alike (Horner, highest power first).
#pragma once

namespace osprey {

constexpr float kTanhClamp = 7.90531110763549805f;
constexpr float kTanhTiny = 0.0004f;
constexpr float kTanhP[7] = {-2.76076847742355e-16f, 2.00018790482477e-13f, -8.60467152213735e-11f,
                             5.12229709037114e-08f,  1.48572235717979e-05f, 6.37261928875436e-04f,
                             4.89352455891786e-03f};
constexpr float kTanhQ[4] = {1.19825839466702e-06f, 1.18534705686654e-04f, 2.26843463243900e-03f,
                             4.89352518554385e-03f};

}  // namespace osprey
