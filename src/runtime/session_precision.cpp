// Mixed precision at Low precision: the model's stem stays in fp32. Rounding an activation to
// fp16 near the input is amplified by every layer after it, while the stem is a small share of
// the work; so the convolutions that make up the first `fullPrecisionStem` of the model's
// convolution work, and every command before the last of them, run in fp32.
#include "runtime/session_impl.h"

namespace osprey {

namespace {

bool isConvolution(OpType t) { return t == OpType::Conv || t == OpType::ConvTranspose; }

}  // namespace

void SessionImpl::chooseFullPrecisionStem() {
  if (config_.precision != BackendConfig::Precision::Low || !main_->honoursFullPrecision()) return;
  const float share = config_.fullPrecisionStem;
  if (!(share > 0)) return;
  int64_t total = 0;
  for (const auto& cmd : commands_)
    if (isConvolution(cmd.op.type)) total += cmd.flops;
  if (total <= 0) return;
  // The stem ends at the last convolution that starts inside the share.
  size_t end = 0;
  int64_t before = 0;
  for (size_t i = 0; i < commands_.size(); ++i) {
    if (!isConvolution(commands_[i].op.type)) continue;
    if (static_cast<double>(before) >= share * static_cast<double>(total)) break;
    before += commands_[i].flops;
    end = i + 1;
  }
  for (size_t i = 0; i < end; ++i) commands_[i].op.fullPrecision = true;
}

}  // namespace osprey
