// The writer's view of the record table (trace_format.h, ASYNCWATCH_RECORD_TYPES): which record a
// call produces and the scratch record that holds any of them. Both are derived from the table, so
// a new call record type is a row there plus the wrapper that fills it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "asyncwatch/trace_format.h"

namespace asyncwatch::calls {

// Which record a call produces: its record type (a call record's row of the table). A runtime call
// adopts the first driver record of its category (runtime_hooks.cpp, adopt_target).
using Category = trace::RecordType;

// Stack-policy masks have one bit per category.
static_assert(trace::kRecordTypeLimit <= 64, "category masks (stack_policy.h) are 64-bit");
inline constexpr uint64_t category_bit(Category c) noexcept { return uint64_t{1} << static_cast<unsigned>(c); }

namespace detail {
// The member of AnyRecord of a row that is not a call record: never used, one byte.
template <uint16_t Id>
struct NotACallRecord {};
}  // namespace detail

// A call record of any type, as the wrappers fill it: one member per row of the table, named as
// the row (rec.Copy, rec.Launch, ...; a row that is not a call record has an empty member).
union AnyRecord {
  trace::RecordHeader h;
  trace::CallHead head;  // every call record starts with it
#define AW_ANY_RECORD_MEMBER(id, name, type, since) \
  std::conditional_t<trace::is_call_record<trace::type>, trace::type, detail::NotACallRecord<id>> name;
  ASYNCWATCH_RECORD_TYPES(AW_ANY_RECORD_MEMBER)
#undef AW_ANY_RECORD_MEMBER
};
}  // namespace asyncwatch::calls
