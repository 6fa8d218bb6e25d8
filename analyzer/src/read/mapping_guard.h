// A trace file that shrinks while it is mapped (a live or rotated file, truncated by another
// process) makes every access to the pages past its new end a SIGBUS. The reader's mappings are
// registered here: a SIGBUS inside one replaces the rest of that mapping with zero pages, which
// the reader takes for unused blocks (the end of the records), and marks the mapping truncated;
// the reader then says so (TraceFile::truncated_while_reading). A SIGBUS anywhere else goes to
// the disposition that was there before.
#pragma once

#include <cstddef>

namespace asyncwatch::mapping_guard {

// Registers [base, base + len); a slot for remove/truncated, or -1 when every slot is taken
// (the mapping is then unguarded).
int add(const void* base, size_t len);
// Before the mapping goes.
void remove(int slot);
// A SIGBUS replaced part of the slot's mapping.
bool truncated(int slot);

}  // namespace asyncwatch::mapping_guard
