// What the model fuzz targets share: a session of the loaded model, run once on inputs of the
// declared shapes whose values come from the fuzz bytes, so every crash replays exactly.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "osprey/osprey.h"

// Without libFuzzer the entries are linked into regression_main.cpp's driver under this name.
#ifndef OSPREY_FUZZ_ENTRY
#define OSPREY_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

namespace osprey::fuzz {

// Inputs larger than this in all are not run: a declared [100000, 100000] input is a valid
// model that would only measure the fuzzing machine's memory. 1 MiB (8 bytes counted per
// element): an op whose output shape depends on data runs on the host between planned stages,
// outside kMaxRunFlops, and its legitimate work on larger inputs passes libFuzzer's 10 s under
// the sanitizers (a Unique sorting 1.4 M floats: 0.8 s in a release build; an antialiased
// Resize of a [1, 1, 4, 63491] input to computed sizes: 0.9 s).
constexpr size_t kMaxInputBytes = size_t{1} << 20;
// The session's own limit (BackendConfig::memoryLimit), well under the fuzzer's -rss_limit_mb,
// so that a model asking for too much is an error Status, as it is for users, and not an OOM.
// 64 MiB: it also bounds the work of ops whose outputs grow from values at run time (a Pad with
// computed pads filled 157 M elements, element by element under the sanitizers, past 10 s).
constexpr uint64_t kMaxSessionBytes = uint64_t{64} << 20;
// A run's time limit (ScheduleConfig::runTimeLimitMs), well under libFuzzer's -timeout: a Loop
// may rightly ask for 2^63 iterations, which is an error here, as it would be for a user with
// a limit, and not a hang.
constexpr int64_t kRunTimeLimitMs = 2000;
// Models whose planned work (SessionStats::flops) is larger are planned but not run.
constexpr int64_t kMaxRunFlops = int64_t{10} * 1000 * 1000;

void runWithInputsFrom(const Interpreter& interp, const uint8_t* data, size_t size);

}  // namespace osprey::fuzz
