// The ids of the tasks one task waits on, in 16 bytes: up to three held inside (most tasks wait
// on one to three), more in a heap block. A plan of 16,384 GPUs holds 22 million tasks, so each
// byte here is 22 MB; boost::container::small_vector<int, 3> took 32.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <stdexcept>

namespace dtsim {

class TaskDeps {
public:
  using value_type = int;
  using iterator = int*;
  using const_iterator = const int*;
  static constexpr std::uint32_t kInline = 3;

  TaskDeps() = default;
  TaskDeps(std::initializer_list<int> ids) { assign(ids.begin(), ids.end()); }
  TaskDeps(const TaskDeps& other) { assign(other.begin(), other.end()); }
  TaskDeps(TaskDeps&& other) noexcept : size_(other.size_)
  {
    std::memcpy(words_, other.words_, sizeof words_);
    other.size_ = 0;   // a heap block now belongs to this one
  }
  TaskDeps& operator=(const TaskDeps& other)
  {
    if (this != &other)
      assign(other.begin(), other.end());
    return *this;
  }
  TaskDeps& operator=(TaskDeps&& other) noexcept
  {
    if (this != &other) {
      release();
      size_ = other.size_;
      std::memcpy(words_, other.words_, sizeof words_);
      other.size_ = 0;
    }
    return *this;
  }
  ~TaskDeps() { release(); }

  std::uint32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int* begin() { return data(); }
  int* end() { return data() + size_; }
  const int* begin() const { return data(); }
  const int* end() const { return data() + size_; }
  int& operator[](std::size_t i) { return data()[i]; }
  int operator[](std::size_t i) const { return data()[i]; }

  void push_back(int id)
  {
    if (size_ < kInline) {
      words_[size_++] = id;
      return;
    }
    if (size_ == kInline || size_ == capacity())
      grow(size_ == kInline ? 2 * kInline : 2 * size_);
    heap()[size_++] = id;
  }

  /// Copies [first, last) first, then lets the old storage go (the range may lie inside it).
  template <typename It>
  void assign(It first, It last)
  {
    const auto n = static_cast<std::size_t>(std::distance(first, last));
    if (n > UINT32_MAX / 2)
      throw std::length_error("TaskDeps: too many dependencies");
    if (n > kInline) {
      int* block = new int[n];
      std::copy(first, last, block);
      release();
      set_heap(block, static_cast<std::uint32_t>(n));
    } else {
      int ids[kInline] = {};
      std::copy(first, last, ids);
      release();
      std::copy(ids, ids + n, words_);
    }
    size_ = static_cast<std::uint32_t>(n);
  }

  friend bool operator==(const TaskDeps& a, const TaskDeps& b)
  {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const TaskDeps& a, const TaskDeps& b) { return !(a == b); }

  /// Drops [first, end()): what std::unique's erase idiom asks for.
  void erase(int* first, int* last)
  {
    if (last != end())
      throw std::logic_error("TaskDeps: only a tail can be erased");
    const auto n = static_cast<std::uint32_t>(first - begin());
    if (size_ > kInline && n <= kInline) {   // back inside
      int* block = heap();
      std::copy(block, block + n, words_);
      delete[] block;
    }
    size_ = n;
  }

private:
  // Inline: words_ hold the ids. Heap (size_ > kInline): words_[0] is the block's capacity and
  // words_[1..2] the bytes of its pointer (copied, so that the object stays 4-byte aligned: 16 bytes).
  std::uint32_t size_ = 0;
  int words_[kInline] = {};

  std::uint32_t capacity() const { return static_cast<std::uint32_t>(words_[0]); }
  int* heap() const
  {
    int* p = nullptr;
    std::memcpy(&p, &words_[1], sizeof p);
    return p;
  }
  void set_heap(int* block, std::uint32_t capacity)
  {
    words_[0] = static_cast<int>(capacity);
    std::memcpy(&words_[1], &block, sizeof block);
  }
  int* data() { return size_ > kInline ? heap() : words_; }
  const int* data() const { return size_ > kInline ? heap() : words_; }
  void grow(std::uint32_t capacity)
  {
    int* block = new int[capacity];
    std::copy(data(), data() + size_, block);
    if (size_ > kInline)
      delete[] heap();
    set_heap(block, capacity);
  }
  void release()
  {
    if (size_ > kInline)
      delete[] heap();
    size_ = 0;
  }
};

static_assert(sizeof(TaskDeps) == 16, "TaskDeps: 16 bytes");

}  // namespace dtsim
