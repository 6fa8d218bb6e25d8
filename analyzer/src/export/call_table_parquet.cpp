#include "export/call_table_parquet.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace asyncwatch {

namespace {

// Thrift's compact protocol, what parquet-format's footer and page headers are written in.
enum : uint8_t { kI32 = 5, kI64 = 6, kBinary = 8, kList = 9, kStruct = 12 };

class Compact {
 public:
  std::string bytes;

  void varint(uint64_t v) {
    while (v >= 0x80) {
      bytes.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    bytes.push_back(static_cast<char>(v));
  }
  void zigzag(int64_t v) { varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void field(int16_t id, uint8_t type) {
    const int delta = id - last_.back();
    if (delta > 0 && delta <= 15) {
      bytes.push_back(static_cast<char>(delta << 4 | type));
    } else {
      bytes.push_back(static_cast<char>(type));
      zigzag(id);
    }
    last_.back() = id;
  }
  void i32(int16_t id, int64_t v) {
    field(id, kI32);
    zigzag(v);
  }
  void i64(int16_t id, int64_t v) {
    field(id, kI64);
    zigzag(v);
  }
  void str(int16_t id, std::string_view s) {
    field(id, kBinary);
    raw_str(s);
  }
  void raw_str(std::string_view s) {
    varint(s.size());
    bytes.append(s.data(), s.size());
  }
  void list(int16_t id, uint8_t element_type, size_t size) {
    field(id, kList);
    list_header(element_type, size);
  }
  void list_header(uint8_t element_type, size_t size) {
    if (size < 15) {
      bytes.push_back(static_cast<char>(size << 4 | element_type));
    } else {
      bytes.push_back(static_cast<char>(0xf0 | element_type));
      varint(size);
    }
  }
  void begin(int16_t id) {  // a struct field
    field(id, kStruct);
    begin_element();
  }
  void begin_element() { last_.push_back(0); }  // a struct as a list element
  void end() {
    bytes.push_back(0);  // STOP
    last_.pop_back();
  }

 private:
  std::vector<int16_t> last_{0};
};

// parquet-format's enums (parquet.thrift).
constexpr int kTypeInt64 = 2, kTypeByteArray = 6;
constexpr int kOptional = 1;
constexpr int kConvertedUtf8 = 0;
constexpr int kEncodingPlain = 0, kEncodingRle = 3, kEncodingRleDictionary = 8;
constexpr int kCodecUncompressed = 0;
constexpr int kDataPage = 0, kDictionaryPage = 2;

bool is_integer(size_t column) { return kCallColumns[column].type == CellType::Integer; }

void put_le(std::string& s, uint64_t v, int bytes) {
  for (int b = 0; b < bytes; ++b) s.push_back(static_cast<char>(v >> (8 * b)));
}

// Values of `bit_width` bits as RLE runs only (the RLE/bit-packing hybrid's run form: a varint
// run length << 1, then the value in whole bytes), which every reader takes.
template <class V>
std::string rle_runs(const std::vector<V>& values, int bit_width) {
  Compact runs;
  const int value_bytes = (bit_width + 7) / 8;
  for (size_t i = 0; i < values.size();) {
    size_t j = i;
    while (j < values.size() && values[j] == values[i]) ++j;
    runs.varint(static_cast<uint64_t>(j - i) << 1);
    put_le(runs.bytes, values[i], value_bytes);
    i = j;
  }
  return runs.bytes;
}

// Definition levels (bit width 1), prefixed by their length as a 4-byte little-endian integer
// (data page v1).
std::string definition_levels(const std::vector<uint8_t>& defined) {
  const std::string runs = rle_runs(defined, 1);
  std::string out;
  put_le(out, runs.size(), 4);
  return out + runs;
}

Compact page_header(int type, size_t size) {
  Compact h;  // PageHeader
  h.i32(1, type);
  h.i32(2, static_cast<int64_t>(size));
  h.i32(3, static_cast<int64_t>(size));
  return h;
}

}  // namespace

ParquetCallSink::ParquetCallSink(std::FILE* out) : out_(out), columns_(kCallColumnCount) {}

void ParquetCallSink::write(const std::string& bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), out_) != bytes.size())
    throw std::runtime_error(std::string("cannot write the Parquet file: ") + std::strerror(errno));
  offset_ += bytes.size();
}

void ParquetCallSink::row(const CallRow& cells) {
  for (size_t c = 0; c < kCallColumnCount; ++c) {
    Column& col = columns_[c];
    const Cell& cell = cells[c];
    const bool present = cell.kind != Cell::Kind::Null;
    col.defined.push_back(present ? 1 : 0);
    if (!present) continue;
    if (is_integer(c)) {
      put_le(col.values, static_cast<uint64_t>(cell.kind == Cell::Kind::Integer ? cell.integer : 0), 8);
      continue;
    }
    const std::string_view t = cell.kind == Cell::Kind::Text ? cell.text : std::string_view{};
    auto [it, added] = col.index.try_emplace(std::string(t), static_cast<uint32_t>(col.index.size()));
    if (added) {
      put_le(col.dictionary, t.size(), 4);
      col.dictionary.append(t.data(), t.size());
    }
    col.indices.push_back(it->second);
  }
  ++total_rows_;
  if (++rows_ == kRowsPerGroup) flush_group();
}

void ParquetCallSink::flush_group() {
  if (rows_ == 0) return;
  // The magic with the first row group (or the footer): a job that reads no trace writes nothing.
  if (offset_ == 0) write("PAR1");
  GroupMeta group{{}, rows_, 0};
  for (size_t c = 0; c < kCallColumnCount; ++c) {
    Column& col = columns_[c];
    const uint64_t start = offset_;
    uint64_t dictionary_offset = 0;
    std::string values = std::move(col.values);
    if (!is_integer(c)) {
      // The dictionary page, then the indices: 1 byte of bit width, then their runs.
      int width = 1;  // at least 1: a width of 0 (one value) is legal but not every reader takes it
      while (width < 32 && (uint64_t{1} << width) < col.index.size()) ++width;
      Compact dict = page_header(kDictionaryPage, col.dictionary.size());
      dict.begin(7);  // DictionaryPageHeader
      dict.i32(1, static_cast<int64_t>(col.index.size()));
      dict.i32(2, kEncodingPlain);
      dict.end();
      dict.end();
      dictionary_offset = offset_;
      write(dict.bytes);
      write(col.dictionary);
      values = std::string(1, static_cast<char>(width)) + rle_runs(col.indices, width);
    }
    const std::string page = definition_levels(col.defined) + values;
    Compact header = page_header(kDataPage, page.size());
    header.begin(5);  // DataPageHeader
    header.i32(1, static_cast<int64_t>(rows_));
    header.i32(2, is_integer(c) ? kEncodingPlain : kEncodingRleDictionary);
    header.i32(3, kEncodingRle);
    header.i32(4, kEncodingRle);
    header.end();
    header.end();
    const uint64_t data_offset = offset_;
    write(header.bytes);
    write(page);
    group.chunks.push_back(ChunkMeta{data_offset, offset_ - start, rows_, dictionary_offset});
    group.bytes += offset_ - start;
    col = Column{};
  }
  groups_.push_back(std::move(group));
  rows_ = 0;
}

void ParquetCallSink::finish() {
  flush_group();
  if (offset_ == 0) write("PAR1");
  Compact meta;  // FileMetaData
  meta.i32(1, 1);
  meta.list(2, kStruct, kCallColumnCount + 1);
  meta.begin_element();  // the schema's root
  meta.str(4, "calls");
  meta.i32(5, static_cast<int64_t>(kCallColumnCount));
  meta.end();
  for (size_t c = 0; c < kCallColumnCount; ++c) {
    meta.begin_element();
    meta.i32(1, is_integer(c) ? kTypeInt64 : kTypeByteArray);
    meta.i32(3, kOptional);
    meta.str(4, kCallColumns[c].name);
    if (!is_integer(c)) meta.i32(6, kConvertedUtf8);
    meta.end();
  }
  meta.i64(3, static_cast<int64_t>(total_rows_));
  meta.list(4, kStruct, groups_.size());
  for (const GroupMeta& g : groups_) {
    meta.begin_element();  // RowGroup
    meta.list(1, kStruct, g.chunks.size());
    for (size_t c = 0; c < g.chunks.size(); ++c) {
      const ChunkMeta& chunk = g.chunks[c];
      meta.begin_element();  // ColumnChunk
      meta.i64(2, static_cast<int64_t>(chunk.dictionary_offset ? chunk.dictionary_offset : chunk.offset));
      meta.begin(3);  // ColumnMetaData
      meta.i32(1, is_integer(c) ? kTypeInt64 : kTypeByteArray);
      meta.list(2, kI32, chunk.dictionary_offset ? 3 : 2);
      meta.zigzag(kEncodingPlain);
      meta.zigzag(kEncodingRle);
      if (chunk.dictionary_offset) meta.zigzag(kEncodingRleDictionary);
      meta.list(3, kBinary, 1);
      meta.raw_str(kCallColumns[c].name);
      meta.i32(4, kCodecUncompressed);
      meta.i64(5, static_cast<int64_t>(chunk.values));
      meta.i64(6, static_cast<int64_t>(chunk.size));
      meta.i64(7, static_cast<int64_t>(chunk.size));
      meta.i64(9, static_cast<int64_t>(chunk.offset));
      if (chunk.dictionary_offset) meta.i64(11, static_cast<int64_t>(chunk.dictionary_offset));
      meta.end();
      meta.end();
    }
    meta.i64(2, static_cast<int64_t>(g.bytes));
    meta.i64(3, static_cast<int64_t>(g.rows));
    meta.end();
  }
  meta.list(5, kStruct, 2);  // key_value_metadata
  for (const auto& [key, value] :
       {std::pair<const char*, std::string>{"asyncwatch.schema_version", std::to_string(kCallTableVersion)},
        std::pair<const char*, std::string>{"asyncwatch.version", ASYNCWATCH_VERSION}}) {
    meta.begin_element();
    meta.str(1, key);
    meta.str(2, value);
    meta.end();
  }
  meta.str(6, "asyncwatch " ASYNCWATCH_VERSION);
  meta.end();
  std::string tail = meta.bytes;
  put_le(tail, tail.size(), 4);
  write(tail + "PAR1");
}

}  // namespace asyncwatch
