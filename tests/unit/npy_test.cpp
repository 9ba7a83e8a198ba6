// .npy reading and writing: round trips per dtype, files laid out exactly as NumPy writes
// them (built by hand here, so the test does not need Python), and corrupt input.
#include "core/npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace osprey {
namespace {

namespace fs = std::filesystem;

std::string tempPath(const std::string& name) {
  return (fs::path(::testing::TempDir()) / ("osprey_npy_test_" + name + ".npy")).string();
}

std::vector<uint8_t> readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Lays out a .npy file the way numpy.save does: the header is padded with spaces and ends
// in '\n' so the data starts on a 64-byte boundary.
std::vector<uint8_t> npyBytes(const std::string& dict, const std::string& data, int major = 1) {
  size_t preamble = major == 1 ? 10 : 12;
  std::string header = dict;
  size_t total = preamble + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < preamble - 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header + data;
  return std::vector<uint8_t>(out.begin(), out.end());
}

std::string floatBytes(std::initializer_list<float> vs) {
  std::string s;
  for (float f : vs) s.append(reinterpret_cast<const char*>(&f), 4);
  return s;
}

Status readBytes(const std::vector<uint8_t>& b, NpyArray* a) { return readNpyBytes(b.data(), b.size(), a); }

TEST(Npy, RoundTripsEveryDtype) {
  const DataType types[] = {DataType::Float32, DataType::Float16, DataType::Float64, DataType::Int8,
                            DataType::Int16,   DataType::Int32,   DataType::Int64,   DataType::UInt8,
                            DataType::UInt16,  DataType::UInt32,  DataType::UInt64,  DataType::Bool};
  std::mt19937 rng(7);
  for (DataType t : types) {
    std::vector<int64_t> shape = {2, 3, 5};
    std::vector<uint8_t> data(30 * dataTypeSize(t));
    for (auto& b : data) b = static_cast<uint8_t>(t == DataType::Bool ? rng() % 2 : rng());
    std::string path = tempPath(dataTypeName(t));
    ASSERT_TRUE(writeNpy(path, t, shape, data.data())) << dataTypeName(t);
    NpyArray a;
    Status s = readNpy(path, &a);
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(a.dtype, t);
    EXPECT_EQ(a.shape, shape);
    EXPECT_EQ(a.data, data) << dataTypeName(t);
    EXPECT_EQ(readAll(path).size() % 64, (data.size()) % 64) << "data must start 64-byte aligned";
    fs::remove(path);
  }
}

TEST(Npy, ScalarsEmptyAndOneDimensional) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{}, {0}, {3}, {2, 0, 4}, {1, 1, 1}}) {
    int64_t n = shapeElements(shape);
    std::vector<int32_t> data(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) data[static_cast<size_t>(i)] = static_cast<int32_t>(i * 7 - 3);
    std::string path = tempPath("shape");
    ASSERT_TRUE(writeNpy(path, DataType::Int32, shape, n ? data.data() : nullptr));
    NpyArray a;
    ASSERT_TRUE(readNpy(path, &a));
    EXPECT_EQ(a.shape, shape) << shapeToString(shape);
    EXPECT_EQ(a.data.size(), static_cast<size_t>(n) * 4);
    if (n) {
      EXPECT_EQ(std::memcmp(a.data.data(), data.data(), a.data.size()), 0);
    }
    fs::remove(path);
  }
}

TEST(Npy, WritesExactlyWhatNumpyWrites) {
  // np.save(f, np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32))
  std::string data = floatBytes({1, 2, 3, 4, 5, 6});
  auto expected = npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data);
  ASSERT_EQ(expected.size(), 128u + 24u);
  std::string path = tempPath("numpy_layout");
  ASSERT_TRUE(writeNpy(path, DataType::Float32, {2, 3}, data.data()));
  EXPECT_EQ(readAll(path), expected);
  // np.save(f, np.uint8(7)): a 0-d array, one-byte dtype with '|'.
  ASSERT_TRUE(writeNpy(path, DataType::UInt8, {}, "\x07"));
  EXPECT_EQ(readAll(path), npyBytes("{'descr': '|u1', 'fortran_order': False, 'shape': (), }", "\x07"));
  fs::remove(path);
}

TEST(Npy, ReadsNumpyLayouts) {
  NpyArray a;
  ASSERT_TRUE(readBytes(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", floatBytes({1, 2, 3, 4, 5, 6})), &a));
  EXPECT_EQ(a.dtype, DataType::Float32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  float last;
  std::memcpy(&last, a.data.data() + 20, 4);
  EXPECT_EQ(last, 6.0f);
  // Versions 2.0 and 3.0 differ only in a 4-byte header length.
  for (int major : {2, 3}) {
    ASSERT_TRUE(readBytes(npyBytes("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\1'), major), &a));
    EXPECT_EQ(a.dtype, DataType::Int64);
  }
  // Reordered keys, double quotes, no trailing comma, Python 2 longs.
  ASSERT_TRUE(readBytes(npyBytes("{\"shape\": (2L, 1L), \"fortran_order\": False, \"descr\": \"<u2\"}", std::string(4, '\0')), &a));
  EXPECT_EQ(a.dtype, DataType::UInt16);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 1}));
  ASSERT_TRUE(readBytes(npyBytes("{'descr': '|b1', 'fortran_order': False, 'shape': (), }", "\x01"), &a));
  EXPECT_EQ(a.dtype, DataType::Bool);
  EXPECT_TRUE(a.shape.empty());
  ASSERT_TRUE(readBytes(npyBytes("{'descr': '|i1', 'fortran_order': True, 'shape': (4,), }", "abcd"), &a))
      << "1-D Fortran order is the same bytes as C order";
  // Trailing bytes are ignored, as np.load ignores them.
  ASSERT_TRUE(readBytes(npyBytes("{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }", "abcdef"), &a));
  EXPECT_EQ(a.data.size(), 2u);
}

void expectError(const std::vector<uint8_t>& b, const std::string& fragment) {
  NpyArray a;
  Status s = readBytes(b, &a);
  ASSERT_FALSE(s) << "expected an error containing '" << fragment << "'";
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
  EXPECT_TRUE(a.data.empty());
}

TEST(Npy, RejectsWhatItCannotRead) {
  const std::string d6 = std::string(24, '\0');
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", d6), "Fortran order");
  expectError(npyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", d6), "big-endian");
  expectError(npyBytes("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", d6), "not supported");
  expectError(npyBytes("{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }", d6), "not supported");
  expectError(npyBytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", d6), "structured");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", d6), "truncated .npy file");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, }", d6), "missing key 'shape'");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", d6), "unknown key");
  expectError(npyBytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", d6), "twice");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", d6), "non-negative");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", d6), "too large");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", d6), "too large");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", d6), "True or False");
  expectError(npyBytes("{'descr': '<f4", d6), "unterminated");
  expectError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } junk", d6), "after the dict");
  std::vector<uint8_t> v4 = npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "abcd");
  v4[6] = 4;
  expectError(v4, "version 4.0");
  expectError(std::vector<uint8_t>{'N', 'U', 'M', 'P', 'Y', 'x', 1, 0, 0, 0, 0}, "bad magic");
  expectError({}, "not a .npy file");
  std::vector<uint8_t> longHeader = npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "abcd");
  longHeader[8] = 0xff;
  longHeader[9] = 0xff;
  expectError(longHeader, "ends past end of file");
}

TEST(Npy, EveryTruncationAndCorruptionIsHandled) {
  const std::vector<uint8_t> good = npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", floatBytes({1, 2, 3, 4, 5, 6}));
  NpyArray a;
  for (size_t n = 0; n < good.size(); ++n) EXPECT_FALSE(readNpyBytes(good.data(), n, &a)) << "prefix " << n;
  std::mt19937 rng(99);
  for (int iter = 0; iter < 5000; ++iter) {
    std::vector<uint8_t> b = good;
    for (int e = 0; e < 3; ++e) b[rng() % 128] = static_cast<uint8_t>(rng());  // header only
    Status s = readBytes(b, &a);
    if (!s) {
      EXPECT_FALSE(s.message().empty());
    }
  }
}

TEST(Npy, WriteErrors) {
  float x = 1;
  Status s = writeNpy(tempPath("bf16"), DataType::BFloat16, {1}, &x);
  EXPECT_EQ(s.code(), StatusCode::Unsupported);
  EXPECT_NE(s.message().find("bfloat16"), std::string::npos);
  EXPECT_EQ(writeNpy(tempPath("str"), DataType::String, {1}, &x).code(), StatusCode::Unsupported);
  EXPECT_FALSE(writeNpy(tempPath("neg"), DataType::Float32, {-1}, &x));
  EXPECT_FALSE(writeNpy(tempPath("null"), DataType::Float32, {2}, nullptr));
  EXPECT_FALSE(writeNpy("/nonexistent-dir/osprey/x.npy", DataType::Float32, {1}, &x));
  NpyArray a;
  EXPECT_EQ(readNpy("/nonexistent-dir/osprey/x.npy", &a).code(), StatusCode::NotFound);
}

}  // namespace
}  // namespace osprey
