// `asyncwatch export --format parquet`: the call table (export/call_table.h) as an Apache Parquet
// file: one OPTIONAL column per kCallColumns entry (INT64, or BYTE_ARRAY annotated UTF8; null
// where not applicable), uncompressed pages with RLE definition levels (integers PLAIN; text
// dictionary-encoded, its indices in RLE runs: a trace's path or an API name repeated on every row
// costs a byte or two a row), row groups of at most kRowsPerGroup rows, the schema version in the footer's key-value metadata
// ("asyncwatch.schema_version"). Written as it goes: the file needs no seek, so the output can be
// a pipe. Only what the format requires of a reader (parquet-format's Thrift definitions) is
// written: readers such as pyarrow, DuckDB and pandas take it.
#pragma once

#include "export/call_table.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

namespace asyncwatch {

class ParquetCallSink : public CallTableSink {
 public:
  // A row group holds this many rows at most: bounded memory (the rows are kept until their group is
  // written) whatever the number of calls.
  static constexpr size_t kRowsPerGroup = 1u << 18;

  explicit ParquetCallSink(std::FILE* out);
  void row(const CallRow& cells) override;
  // Writes the last row group and the footer.
  void finish();

 private:
  struct Column {
    std::vector<uint8_t> defined;                     // per row: 1 a value, 0 null
    std::string values;                               // integers: PLAIN, 8 bytes each
    std::unordered_map<std::string, uint32_t> index;  // text: the dictionary
    std::string dictionary;                           // text: PLAIN, 4-byte length + bytes each
    std::vector<uint32_t> indices;                    // text: per value, its dictionary index
  };
  struct ChunkMeta {
    uint64_t offset, size, values;
    uint64_t dictionary_offset;  // 0: none
  };
  struct GroupMeta {
    std::vector<ChunkMeta> chunks;
    uint64_t rows, bytes;
  };
  void write(const std::string& bytes);
  void flush_group();

  std::FILE* out_;
  uint64_t offset_ = 0;
  uint64_t rows_ = 0;  // in the group being built
  uint64_t total_rows_ = 0;
  std::vector<Column> columns_;
  std::vector<GroupMeta> groups_;
};

}  // namespace asyncwatch
