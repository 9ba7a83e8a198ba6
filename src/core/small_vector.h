// A vector whose first N elements live inside it: bookkeeping of small rank built while a run
// executes (broadcast plans) costs no heap allocation; a longer one moves to the heap.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

namespace osprey {

template <class T, size_t N>
class SmallVector {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return size_ > N ? heap_.data() : inline_.data(); }
  const T* data() const { return size_ > N ? heap_.data() : inline_.data(); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }
  void resize(size_t n) {
    if (n > N) {
      if (size_ <= N) heap_.assign(inline_.begin(), inline_.begin() + size_);
      heap_.resize(n);
    } else if (size_ > N) {
      std::copy(heap_.begin(), heap_.begin() + n, inline_.begin());
      heap_.clear();
    } else if (n > size_) {
      std::fill(inline_.begin() + size_, inline_.begin() + n, T());
    }
    size_ = n;
  }
  void push_back(const T& value) {
    if (size_ < N) {
      inline_[size_++] = value;
      return;
    }
    if (size_ == N) heap_.assign(inline_.begin(), inline_.end());
    heap_.push_back(value);
    ++size_;
  }

 private:
  std::array<T, N> inline_{};
  std::vector<T> heap_;  // every element once size_ > N
  size_t size_ = 0;
};

}  // namespace osprey
