// Safetensors reader: round trips, conversion, and every way a header can lie.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/safetensors_writer.h"
#include "common/test_util.h"
#include "core/half.h"
#include "core/mapped_file.h"
#include "model/safetensors.h"

namespace fdpp {
namespace {

namespace fs = std::filesystem;
using test::WriterTensor;

// ok() is false, the code is `code`, and the message contains every part.
::testing::AssertionResult IsError(const Status& s, StatusCode code,
                                   const std::vector<std::string>& parts) {
  if (s.ok()) return ::testing::AssertionFailure() << "expected an error, got OK";
  if (s.code() != code)
    return ::testing::AssertionFailure()
           << "expected code '" << status_code_name(code) << "', got " << s.to_string();
  for (const std::string& p : parts)
    if (s.message().find(p) == std::string::npos)
      return ::testing::AssertionFailure() << "message lacks '" << p << "': " << s.to_string();
  return ::testing::AssertionSuccess();
}

fs::path put(const fs::path& dir, const std::string& name, const std::string& bytes) {
  const fs::path p = dir / name;
  test::write_file(p, bytes);
  return p;
}

// A one-tensor file whose header is written by hand (shape and offsets as raw JSON).
std::string one_tensor(const std::string& name, const std::string& dtype, const std::string& shape,
                       const std::string& offsets, size_t data_bytes) {
  const std::string header = "{\"" + name + "\": {\"dtype\": \"" + dtype + "\", \"shape\": " +
                             shape + ", \"data_offsets\": " + offsets + "}}";
  return test::make_safetensors_raw(header, std::string(data_bytes, '\x01'));
}

float read_f32(const uint8_t* p, size_t i) {
  float f;
  std::memcpy(&f, p + 4 * i, 4);
  return f;
}
uint16_t read_u16(const uint8_t* p, size_t i) {
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return h;
}

// ---- MappedFile --------------------------------------------------------------------

TEST(MappedFile, MapsAndMoves) {
  const fs::path dir = test::scratch_dir("mapped_file");
  const fs::path p = put(dir, "x.bin", "hello");
  auto r = MappedFile::open(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  MappedFile a = std::move(r).value();
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(std::memcmp(a.data(), "hello", 5), 0);
  EXPECT_EQ(a.path(), p);
  const uint8_t* addr = a.data();
  MappedFile b = std::move(a);
  EXPECT_EQ(b.data(), addr);  // a move keeps the mapping where it is
  EXPECT_EQ(b.size(), 5u);
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty, by contract
  MappedFile c;
  c = std::move(b);
  EXPECT_EQ(c.data(), addr);
  EXPECT_EQ(std::memcmp(c.data(), "hello", 5), 0);
}

TEST(MappedFile, EmptyFile) {
  const fs::path dir = test::scratch_dir("mapped_file_empty");
  auto r = MappedFile::open(put(dir, "empty", ""));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->size(), 0u);
  EXPECT_NE(r->data(), nullptr);
}

TEST(MappedFile, Errors) {
  const fs::path dir = test::scratch_dir("mapped_file_errors");
  EXPECT_TRUE(IsError(MappedFile::open(dir / "missing.bin").status(), StatusCode::kNotFound,
                      {"missing.bin", "No such file"}));
  EXPECT_TRUE(IsError(MappedFile::open(dir).status(), StatusCode::kIoError,
                      {dir.string(), "Is a directory"}));
  const fs::path locked = put(dir, "locked.bin", "x");
  ::chmod(locked.c_str(), 0);
  if (::geteuid() != 0) {  // root reads anything
    EXPECT_TRUE(IsError(MappedFile::open(locked).status(), StatusCode::kIoError,
                        {"locked.bin", "Permission denied"}));
  }
}

// ---- one file ------------------------------------------------------------------------

TEST(Safetensors, RoundTripF32F16BF16WithMetadata) {
  const fs::path dir = test::scratch_dir("st_round_trip");
  const std::vector<float> a = test::random_values(6, 1);
  const std::vector<float> b = {1.0f, -2.5f, 65504.0f, 1e-6f};
  const std::vector<float> c = {3.14159f, -0.0f, 1e30f, -7.0f};
  const fs::path p = put(dir, "m.safetensors",
                         test::make_safetensors({test::f32_tensor("a.weight", {2, 3}, a),
                                                 test::f16_tensor("b", {4}, b),
                                                 test::bf16_tensor("c", {1, 2, 2}, c)},
                                                {{"format", "pt"}, {"note", "hi"}}));
  auto r = SafetensorsFile::open(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const SafetensorsFile& f = *r;
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.tensors()[0].name, "a.weight");  // sorted by name
  EXPECT_EQ(f.tensors()[2].name, "c");
  EXPECT_EQ(f.metadata().size(), 2u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.path(), p);
  EXPECT_EQ(f.find("nope"), nullptr);
  EXPECT_EQ(f.find("a"), nullptr);

  const TensorInfo* ta = f.find("a.weight");
  ASSERT_NE(ta, nullptr);
  EXPECT_EQ(ta->dtype_name, "F32");
  EXPECT_EQ(ta->dtype, DType::kF32);
  EXPECT_EQ(ta->shape, Shape({2, 3}));
  EXPECT_EQ(ta->nbytes, 24u);
  EXPECT_EQ(ta->file, p);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(read_f32(ta->data, i), a[i]);

  const TensorInfo* tb = f.find("b");
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(tb->dtype, DType::kF16);
  EXPECT_EQ(tb->shape, Shape({4}));
  EXPECT_EQ(tb->nbytes, 8u);
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(read_u16(tb->data, i), f32_to_f16(b[i]));

  const TensorInfo* tc = f.find("c");
  ASSERT_NE(tc, nullptr);
  EXPECT_EQ(tc->dtype, DType::kBF16);
  EXPECT_EQ(tc->shape, Shape({1, 2, 2}));
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(read_u16(tc->data, i), f32_to_bf16(c[i]));

  // The reference writer pads the header so the data region starts 8-aligned.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ta->data) % 8, 0u);

  // Moving the file keeps every tensor pointer valid.
  const uint8_t* before = ta->data;
  SafetensorsFile moved = std::move(r).value();
  EXPECT_EQ(moved.find("a.weight")->data, before);
  EXPECT_EQ(read_f32(moved.find("a.weight")->data, 5), a[5]);
}

TEST(Safetensors, ScalarAndZeroSizeTensors) {
  const fs::path dir = test::scratch_dir("st_scalar");
  const fs::path p = put(dir, "m.safetensors",
                         test::make_safetensors({test::f32_tensor("scalar", {}, {42.0f}),
                                                 test::f16_tensor("empty", {0, 5}, {}),
                                                 test::bf16_tensor("empty2", {3, 0}, {}),
                                                 test::f32_tensor("after", {1}, {7.0f})}));
  auto r = SafetensorsFile::open(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const TensorInfo* s = r->find("scalar");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->shape.rank, 0);
  EXPECT_EQ(s->shape.numel(), 1);
  EXPECT_EQ(s->nbytes, 4u);
  EXPECT_EQ(read_f32(s->data, 0), 42.0f);
  const TensorInfo* e = r->find("empty");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->shape, Shape({0, 5}));
  EXPECT_EQ(e->nbytes, 0u);
  EXPECT_TRUE(convert_tensor(*e, DType::kF32, nullptr).ok());
  EXPECT_EQ(read_f32(r->find("after")->data, 0), 7.0f);
  float out = 0;
  ASSERT_TRUE(convert_tensor(*s, DType::kF32, &out).ok());
  EXPECT_EQ(out, 42.0f);
}

TEST(Safetensors, OtherDTypesAreListedButNotLoadable) {
  const fs::path dir = test::scratch_dir("st_other_dtypes");
  const fs::path p = put(
      dir, "m.safetensors",
      test::make_safetensors({{"ids", "I64", {3}, std::string(24, '\0')},
                              {"mask", "BOOL", {2, 2}, std::string(4, '\1')},
                              {"q", "F8_E4M3", {8}, std::string(8, '\0')},
                              {"d", "F64", {1}, std::string(8, '\0')},
                              {"packed", "F4", {3, 2}, std::string(3, '\0')}}));
  auto r = SafetensorsFile::open(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const TensorInfo* ids = r->find("ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(ids->dtype_name, "I64");
  EXPECT_FALSE(ids->dtype.has_value());
  EXPECT_EQ(ids->nbytes, 24u);
  EXPECT_EQ(r->find("packed")->nbytes, 3u);
  int64_t buf[3];
  EXPECT_TRUE(IsError(convert_tensor(*ids, DType::kF32, buf), StatusCode::kUnsupported,
                      {"ids", "I64", p.string()}));
}

TEST(Safetensors, UnpaddedHeaderGivesUnalignedButCorrectData) {
  const fs::path dir = test::scratch_dir("st_unaligned");
  const std::string header =
      R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";  // 55 bytes: data at 63
  const float vals[2] = {1.5f, -3.25f};
  const fs::path p = put(dir, "m.safetensors",
                         test::make_safetensors_raw(header, std::string(
                             reinterpret_cast<const char*>(vals), 8)));
  auto r = SafetensorsFile::open(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  float out[2];
  ASSERT_TRUE(convert_tensor(*r->find("t"), DType::kF32, out).ok());
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -3.25f);
}

// ---- convert_tensor ------------------------------------------------------------------

// The expected bits of converting one element, built from core/half.h directly.
uint32_t expected_bits(const uint8_t* src, size_t i, DType from, DType to) {
  float f;
  if (from == DType::kF32) f = read_f32(src, i);
  else if (from == DType::kF16) f = f16_to_f32(read_u16(src, i));
  else f = bf16_to_f32(read_u16(src, i));
  if (to == DType::kF32) return f32_bits(f);
  return to == DType::kF16 ? f32_to_f16(f) : f32_to_bf16(f);
}

TEST(Safetensors, ConvertBetweenAllPairs) {
  const fs::path dir = test::scratch_dir("st_convert");
  // Long enough to take the OpenMP path, with the special values up front.
  std::vector<float> v = test::random_values(100'003, 7, 70000.0f);
  const float special[] = {0.0f, -0.0f, 65504.0f, 65520.0f, 1e-8f, 0x1p-25f, 1.0f + 0x1p-11f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(), 3e38f, 1e-40f};
  std::copy(std::begin(special), std::end(special), v.begin());
  for (size_t i = 12; i < 1000; ++i) v[i] = std::ldexp(v[i], -int(i % 40));  // small magnitudes
  const std::vector<int64_t> shape = {static_cast<int64_t>(v.size())};
  const fs::path p = put(dir, "m.safetensors",
                         test::make_safetensors({test::f32_tensor("f32", shape, v),
                                                 test::f16_tensor("f16", shape, v),
                                                 test::bf16_tensor("bf16", shape, v)}));
  auto r = SafetensorsFile::open(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const DType all[] = {DType::kF32, DType::kF16, DType::kBF16};
  int pairs = 0;
  for (DType from : all) {
    const char* name = from == DType::kF32 ? "f32" : from == DType::kF16 ? "f16" : "bf16";
    const TensorInfo* t = r->find(name);
    ASSERT_NE(t, nullptr);
    for (DType to : all) {
      std::vector<uint8_t> out(v.size() * dtype_size(to) + 16, 0xcd);  // (n * elem + guard)
      ASSERT_TRUE(convert_tensor(*t, to, out.data()).ok());
      size_t bad = 0;
      for (size_t i = 0; i < v.size(); ++i) {
        const uint32_t got = to == DType::kF32 ? f32_bits(read_f32(out.data(), i))
                                               : read_u16(out.data(), i);
        if (got != expected_bits(t->data, i, from, to) && ++bad < 5)
          ADD_FAILURE() << dtype_name(from) << "->" << dtype_name(to) << " at " << i;
      }
      EXPECT_EQ(bad, 0u);
      for (size_t i = v.size() * dtype_size(to); i < out.size(); ++i)
        ASSERT_EQ(out[i], 0xcd) << "wrote past the end";
      ++pairs;
    }
  }
  EXPECT_EQ(pairs, 9);
  std::vector<int32_t> i32(v.size());
  EXPECT_TRUE(IsError(convert_tensor(*r->find("f32"), DType::kI32, i32.data()),
                      StatusCode::kInvalidArgument, {"f32"}));
}

// ---- corrupt files ---------------------------------------------------------------------

class Corruption : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::scratch_dir(std::string("st_corrupt_") +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  // Writes `bytes` as bad.safetensors and returns the open's status.
  Status open_bytes(const std::string& bytes) {
    path_ = put(dir_, "bad.safetensors", bytes);
    auto r = SafetensorsFile::open(path_);
    return r.status();
  }
  fs::path dir_, path_;
};

std::string u64_le(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

TEST_F(Corruption, EmptyAndShortFiles) {
  EXPECT_TRUE(IsError(open_bytes(""), StatusCode::kCorrupt, {path_.string(), "0 bytes"}));
  EXPECT_TRUE(IsError(open_bytes("1234567"), StatusCode::kCorrupt, {path_.string(), "7 bytes"}));
}

TEST_F(Corruption, HeaderLengthBeyondFile) {
  EXPECT_TRUE(IsError(open_bytes(u64_le(1000) + "{}"), StatusCode::kCorrupt,
                      {path_.string(), "1000", "past the end"}));
  EXPECT_TRUE(IsError(open_bytes(u64_le(3) + "{}"), StatusCode::kCorrupt, {"past the end"}));
}

TEST_F(Corruption, HeaderLengthOverLimit) {
  // Only the 8-byte claim is written: the reader must refuse before touching the rest.
  EXPECT_TRUE(IsError(open_bytes(u64_le(100'000'001)), StatusCode::kCorrupt,
                      {path_.string(), "100000001", "limit"}));
  EXPECT_TRUE(IsError(open_bytes(u64_le(UINT64_MAX) + "{}"), StatusCode::kCorrupt, {"limit"}));
}

TEST_F(Corruption, HeaderNotJson) {
  EXPECT_TRUE(IsError(open_bytes(test::make_safetensors_raw("{nope", "")), StatusCode::kCorrupt,
                      {path_.string(), "not valid JSON"}));
  EXPECT_TRUE(IsError(open_bytes(test::make_safetensors_raw("", "")), StatusCode::kCorrupt,
                      {"not valid JSON"}));
  EXPECT_TRUE(IsError(open_bytes(test::make_safetensors_raw("{\"a\": \"\xff\xfe\"}", "")),
                      StatusCode::kCorrupt, {"not valid JSON"}));  // invalid UTF-8
  EXPECT_TRUE(IsError(open_bytes(test::make_safetensors_raw(std::string(5000, '[') +
                                                                std::string(5000, ']'), "")),
                      StatusCode::kCorrupt, {"nests deeper"}));
}

TEST_F(Corruption, HeaderNotAnObject) {
  EXPECT_TRUE(IsError(open_bytes(test::make_safetensors_raw("[1, 2]", "")), StatusCode::kCorrupt,
                      {path_.string(), "not an object"}));
  EXPECT_TRUE(IsError(open_bytes(test::make_safetensors_raw("\"x\"", "")), StatusCode::kCorrupt,
                      {"not an object"}));
}

TEST_F(Corruption, BadEntries) {
  EXPECT_TRUE(IsError(open_bytes(test::make_safetensors_raw("{\"w\": 3}", "")),
                      StatusCode::kCorrupt, {path_.string(), "'w'", "not a JSON object"}));
  EXPECT_TRUE(IsError(
      open_bytes(test::make_safetensors_raw(R"({"w": {"shape": [1], "data_offsets": [0, 4]}})",
                                            std::string(4, '\0'))),
      StatusCode::kCorrupt, {"'w'", "dtype"}));
  EXPECT_TRUE(IsError(open_bytes(one_tensor("w", "F32", "[1]", "[0]", 4)), StatusCode::kCorrupt,
                      {"'w'", "data_offsets"}));
  EXPECT_TRUE(IsError(open_bytes(one_tensor("w", "F32", "[1]", "[0, 4.0]", 4)),
                      StatusCode::kCorrupt, {"'w'", "data_offsets"}));
  EXPECT_TRUE(IsError(open_bytes(one_tensor("w", "F32", "3", "[0, 12]", 12)),
                      StatusCode::kCorrupt, {"'w'", "shape"}));
  EXPECT_TRUE(IsError(open_bytes(test::make_safetensors_raw(R"({"__metadata__": {"k": 1}})", "")),
                      StatusCode::kCorrupt, {path_.string(), "__metadata__", "'k'"}));
  EXPECT_TRUE(IsError(open_bytes(test::make_safetensors_raw(R"({"__metadata__": [1]})", "")),
                      StatusCode::kCorrupt, {"__metadata__"}));
}

TEST_F(Corruption, UnknownDType) {
  EXPECT_TRUE(IsError(open_bytes(one_tensor("layer.0.w", "F17", "[2]", "[0, 4]", 4)),
                      StatusCode::kCorrupt, {path_.string(), "layer.0.w", "F17", "unknown dtype"}));
  EXPECT_TRUE(IsError(open_bytes(one_tensor("w", "f32", "[1]", "[0, 4]", 4)), StatusCode::kCorrupt,
                      {"unknown dtype 'f32'"}));  // the spelling is case-sensitive
}

TEST_F(Corruption, ShapeByteLengthMismatch) {
  EXPECT_TRUE(IsError(open_bytes(test::make_safetensors({{"emb", "F32", {2, 3},
                                                          std::string(20, '\0')}})),
                      StatusCode::kCorrupt, {path_.string(), "emb", "[2, 3]", "does not match"}));
  EXPECT_TRUE(IsError(open_bytes(one_tensor("p", "F4", "[3]", "[0, 2]", 2)), StatusCode::kCorrupt,
                      {"'p'", "does not match"}));  // 12 bits is not a whole number of bytes
  // numel * 64 bits overflows u64: must be a mismatch, not a wrapped-around match.
  EXPECT_TRUE(IsError(open_bytes(one_tensor("big", "F64", "[2305843009213693952]", "[0, 0]", 0)),
                      StatusCode::kCorrupt, {"'big'", "does not match"}));
  // The element count overflows even though another dim is 0.
  EXPECT_TRUE(IsError(open_bytes(one_tensor("z", "F32", "[4294967296, 4294967296, 0]", "[0, 0]",
                                            0)),
                      StatusCode::kCorrupt, {"'z'", "overflows"}));
}

TEST_F(Corruption, OffsetsBeyondData) {
  EXPECT_TRUE(IsError(open_bytes(one_tensor("w", "F32", "[25]", "[0, 100]", 24)),
                      StatusCode::kCorrupt, {path_.string(), "'w'", "[0, 100]", "24 bytes"}));
  EXPECT_TRUE(IsError(open_bytes(one_tensor("w", "U8", "[1]",
                                            "[18446744073709551615, 18446744073709551615]", 0)),
                      StatusCode::kCorrupt, {"'w'", "data_offsets"}));
}

TEST_F(Corruption, BeginAfterEnd) {
  EXPECT_TRUE(IsError(open_bytes(one_tensor("w", "U8", "[4]", "[8, 4]", 16)), StatusCode::kCorrupt,
                      {path_.string(), "'w'", "begin > end"}));
  EXPECT_TRUE(IsError(open_bytes(one_tensor("w", "U8", "[4]", "[-4, 0]", 16)),
                      StatusCode::kCorrupt, {"'w'", "data_offsets"}));
}

TEST_F(Corruption, OverlappingOffsets) {
  const std::string header =
      R"({"first": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
          "second": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})";
  EXPECT_TRUE(IsError(open_bytes(test::make_safetensors_raw(header, std::string(24, '\0'))),
                      StatusCode::kCorrupt, {path_.string(), "'first'", "'second'", "overlap"}));
  const std::string same =
      R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
          "b": {"dtype": "I32", "shape": [1], "data_offsets": [0, 4]}})";
  EXPECT_TRUE(IsError(open_bytes(test::make_safetensors_raw(same, std::string(4, '\0'))),
                      StatusCode::kCorrupt, {"overlap"}));
  // Touching ranges and empty tensors at a shared offset are fine.
  const std::string touching =
      R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
          "e": {"dtype": "U8", "shape": [0], "data_offsets": [4, 4]},
          "f": {"dtype": "U8", "shape": [0], "data_offsets": [4, 4]},
          "b": {"dtype": "U8", "shape": [4], "data_offsets": [4, 8]}})";
  EXPECT_TRUE(open_bytes(test::make_safetensors_raw(touching, std::string(8, '\0'))).ok());
}

TEST_F(Corruption, BadShapeEntries) {
  for (const char* shape : {"[-1, 4]", "[2.5]", "[\"2\"]", "[null]", "[1e3]",
                            "[9223372036854775808]"}) {
    EXPECT_TRUE(IsError(open_bytes(one_tensor("w", "F32", shape, "[0, 16]", 16)),
                        StatusCode::kCorrupt, {path_.string(), "'w'", "non-negative integer"}))
        << shape;
  }
}

TEST_F(Corruption, RankFiveIsUnsupported) {
  EXPECT_TRUE(IsError(open_bytes(one_tensor("conv3d", "F32", "[1, 1, 1, 1, 2]", "[0, 8]", 8)),
                      StatusCode::kUnsupported, {path_.string(), "conv3d", "rank 5"}));
  // Rank 4 is fine.
  EXPECT_TRUE(open_bytes(one_tensor("w", "F32", "[1, 1, 1, 2]", "[0, 8]", 8)).ok());
}

// ---- model folders ----------------------------------------------------------------------

std::string index_json(const std::vector<std::pair<std::string, std::string>>& weight_map) {
  std::string s = R"({"metadata": {"total_size": 0}, "weight_map": {)";
  for (size_t i = 0; i < weight_map.size(); ++i)
    s += (i ? ", \"" : "\"") + weight_map[i].first + "\": \"" + weight_map[i].second + "\"";
  return s + "}}";
}

TEST(SafetensorsModel, SingleFile) {
  const fs::path dir = test::scratch_dir("stm_single");
  test::write_safetensors(dir / "model.safetensors",
                          {test::f32_tensor("b", {2}, {1, 2}), test::f16_tensor("a", {1}, {3})});
  auto r = SafetensorsModel::open(dir);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  SafetensorsModel m = std::move(r).value();
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(m.total_bytes(), 10u);
  ASSERT_NE(m.find("b"), nullptr);
  EXPECT_EQ(read_f32(m.find("b")->data, 1), 2.0f);
  EXPECT_EQ(m.find("c"), nullptr);

  // A path to the file itself works too.
  auto direct = SafetensorsModel::open(dir / "model.safetensors");
  ASSERT_TRUE(direct.ok()) << direct.status().to_string();
  EXPECT_EQ(direct->size(), 2u);
}

TEST(SafetensorsModel, TwoShardsRoundTrip) {
  const fs::path dir = test::scratch_dir("stm_shards");
  const std::vector<float> w0 = test::random_values(12, 3), w1 = test::random_values(8, 4);
  test::write_safetensors(dir / "model-00001-of-00002.safetensors",
                          {test::f32_tensor("layers.0.w", {3, 4}, w0),
                           test::bf16_tensor("embed", {2, 2}, {1, 2, 3, 4})});
  test::write_safetensors(dir / "model-00002-of-00002.safetensors",
                          {test::f16_tensor("layers.1.w", {2, 4}, w1)});
  test::write_file(dir / "model.safetensors.index.json",
                   index_json({{"layers.0.w", "model-00001-of-00002.safetensors"},
                               {"embed", "model-00001-of-00002.safetensors"},
                               {"layers.1.w", "model-00002-of-00002.safetensors"}}));
  auto r = SafetensorsModel::open(dir);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  SafetensorsModel m = std::move(r).value();
  EXPECT_EQ(m.files().size(), 2u);
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.names(), (std::vector<std::string>{"embed", "layers.0.w", "layers.1.w"}));
  EXPECT_EQ(m.total_bytes(), 48u + 8u + 16u);

  const TensorInfo* t0 = m.find("layers.0.w");
  ASSERT_NE(t0, nullptr);
  EXPECT_EQ(t0->file, dir / "model-00001-of-00002.safetensors");
  std::vector<float> out(12);  // (3, 4)
  ASSERT_TRUE(convert_tensor(*t0, DType::kF32, out.data()).ok());
  EXPECT_EQ(out, w0);
  const TensorInfo* t1 = m.find("layers.1.w");
  ASSERT_NE(t1, nullptr);
  EXPECT_EQ(t1->file, dir / "model-00002-of-00002.safetensors");
  EXPECT_EQ(t1->shape, Shape({2, 4}));
  ASSERT_TRUE(convert_tensor(*t1, DType::kF32, out.data()).ok());
  for (size_t i = 0; i < w1.size(); ++i) EXPECT_EQ(out[i], f16_to_f32(f32_to_f16(w1[i])));
}

// A two-shard folder where the index is whatever `weight_map` says.
fs::path sharded_folder(const std::string& name,
                        const std::vector<std::pair<std::string, std::string>>& weight_map,
                        bool duplicate = false) {
  const fs::path dir = test::scratch_dir(name);
  test::write_safetensors(dir / "s1.safetensors", {test::f32_tensor("x", {1}, {1})});
  std::vector<WriterTensor> s2 = {test::f32_tensor("y", {1}, {2})};
  if (duplicate) s2.push_back(test::f32_tensor("x", {1}, {3}));
  test::write_safetensors(dir / "s2.safetensors", s2);
  test::write_file(dir / "model.safetensors.index.json", index_json(weight_map));
  return dir;
}

TEST(SafetensorsModel, MissingShard) {
  const fs::path dir =
      sharded_folder("stm_missing_shard", {{"x", "s1.safetensors"}, {"y", "s3.safetensors"}});
  EXPECT_TRUE(IsError(SafetensorsModel::open(dir).status(), StatusCode::kNotFound,
                      {"model.safetensors.index.json", "s3.safetensors", "'y'"}));
}

TEST(SafetensorsModel, TensorMissingFromShard) {
  const fs::path dir = sharded_folder("stm_missing_tensor", {{"x", "s1.safetensors"},
                                                             {"y", "s2.safetensors"},
                                                             {"z", "s2.safetensors"}});
  EXPECT_TRUE(IsError(SafetensorsModel::open(dir).status(), StatusCode::kCorrupt,
                      {"model.safetensors.index.json", "'z'", "s2.safetensors"}));
}

TEST(SafetensorsModel, ShardPathEscapingFolder) {
  for (const char* bad : {"../s1.safetensors", "/etc/passwd", "sub/../../s1.safetensors", ""}) {
    const fs::path dir =
        sharded_folder("stm_escape", {{"x", "s1.safetensors"}, {"y", bad}});
    EXPECT_TRUE(IsError(SafetensorsModel::open(dir).status(), StatusCode::kCorrupt,
                        {"model.safetensors.index.json", "'y'", "escapes"}))
        << bad;
  }
}

TEST(SafetensorsModel, DuplicateNameAcrossShards) {
  const fs::path dir = sharded_folder("stm_duplicate",
                                      {{"x", "s1.safetensors"}, {"y", "s2.safetensors"}}, true);
  EXPECT_TRUE(IsError(SafetensorsModel::open(dir).status(), StatusCode::kCorrupt,
                      {"'x'", "s1.safetensors", "s2.safetensors"}));
}

TEST(SafetensorsModel, BadIndex) {
  const fs::path dir = test::scratch_dir("stm_bad_index");
  test::write_file(dir / "model.safetensors.index.json", "{\"weight_map\": [");
  EXPECT_TRUE(IsError(SafetensorsModel::open(dir).status(), StatusCode::kCorrupt,
                      {"model.safetensors.index.json", "not valid JSON"}));
  test::write_file(dir / "model.safetensors.index.json", "{\"metadata\": {}}");
  EXPECT_TRUE(IsError(SafetensorsModel::open(dir).status(), StatusCode::kCorrupt,
                      {"weight_map"}));
  test::write_file(dir / "model.safetensors.index.json", "{\"weight_map\": {\"x\": 1}}");
  EXPECT_TRUE(IsError(SafetensorsModel::open(dir).status(), StatusCode::kCorrupt, {"'x'"}));
}

TEST(SafetensorsModel, CorruptShardNamesTheShard) {
  const fs::path dir = sharded_folder("stm_corrupt_shard",
                                      {{"x", "s1.safetensors"}, {"y", "s2.safetensors"}});
  test::write_file(dir / "s2.safetensors", "junk");
  EXPECT_TRUE(IsError(SafetensorsModel::open(dir).status(), StatusCode::kCorrupt,
                      {"s2.safetensors", "too short"}));
}

TEST(SafetensorsModel, PickleCheckpointsAreRefused) {
  const fs::path dir = test::scratch_dir("stm_pickle");
  test::write_file(dir / "pytorch_model.bin", "PK\x03\x04 not really a zip");
  test::write_file(dir / "config.json", "{}");
  EXPECT_TRUE(IsError(SafetensorsModel::open(dir).status(), StatusCode::kUnsupported,
                      {dir.string(), "pytorch_model.bin", "pickle", "safety", "safetensors"}));
}

TEST(SafetensorsModel, NothingThere) {
  const fs::path dir = test::scratch_dir("stm_empty");
  EXPECT_TRUE(IsError(SafetensorsModel::open(dir).status(), StatusCode::kNotFound,
                      {dir.string(), "model.safetensors"}));
  EXPECT_TRUE(IsError(SafetensorsModel::open(dir / "nope").status(), StatusCode::kNotFound,
                      {"nope"}));
  test::write_safetensors(dir / "consolidated.safetensors", {test::f32_tensor("x", {1}, {1})});
  EXPECT_TRUE(IsError(SafetensorsModel::open(dir).status(), StatusCode::kNotFound,
                      {"consolidated.safetensors"}));
}

}  // namespace
}  // namespace fdpp
