// Demangled C++ names for messages and matching: the name of a function without its return
// type and argument list, and a length limit that keeps both ends of a long name.
#pragma once

#include <cstddef>
#include <string>

namespace asyncwatch {

// "void (anonymous namespace)::csr_partition_kernel<int, int>(int const*, int*)" ->
// "(anonymous namespace)::csr_partition_kernel<int, int>"; "main::{lambda(int)#1}::operator()(int) const"
// -> "main::{lambda(int)#1}::operator()"; "f(int) [clone .cold]" -> "f". Template arguments kept.
std::string name_without_signature(const std::string& demangled);

// As name_without_signature, and without any template argument list: "cudaLaunchKernel" for
// "cudaError cudaLaunchKernel<char>(char const*, dim3)", "ns::A::f" for "ns::A<int>::f<2>(int)".
std::string qualified_name(const std::string& demangled);

// `name` when it has at most `max` bytes; otherwise its start and its end with "..." between
// them (both ends say most: the namespace and class, and the function and its last template
// arguments), at most `max` bytes in all; cut between tokens where one is near, never inside a
// UTF-8 sequence.
std::string shorten_middle(const std::string& name, size_t max);

// The limit the text report and messages apply to function and kernel names.
constexpr size_t kDisplayNameMax = 240;

}  // namespace asyncwatch
