#include "findings/analysis.h"
#include "symbols/names.h"

#include <gtest/gtest.h>

using namespace asyncwatch;

TEST(Names, WithoutSignature) {
  EXPECT_EQ(name_without_signature("void (anonymous namespace)::csr_partition_kernel<int, int>(int const*, int*)"),
            "(anonymous namespace)::csr_partition_kernel<int, int>");
  EXPECT_EQ(name_without_signature("void reduce<float>(float*, int)"), "reduce<float>");
  EXPECT_EQ(name_without_signature("dummy(long long)"), "dummy");
  EXPECT_EQ(name_without_signature("main"), "main");
  EXPECT_EQ(name_without_signature("main::{lambda(int)#1}::operator()(int) const"),
            "main::{lambda(int)#1}::operator()");
  EXPECT_EQ(name_without_signature("f(int) [clone .cold]"), "f");
  EXPECT_EQ(name_without_signature("std::vector<int, std::allocator<int> >::operator[](unsigned long)"),
            "std::vector<int, std::allocator<int> >::operator[]");
  EXPECT_EQ(name_without_signature("bool operator<(A const&, A const&)"), "operator<");
  EXPECT_EQ(name_without_signature("void for_each_kernel<main::{lambda(int)#1}>(main::{lambda(int)#1}, int)"),
            "for_each_kernel<main::{lambda(int)#1}>");
  EXPECT_EQ(name_without_signature("unsigned int ns::(anonymous namespace)::count(int)"),
            "ns::(anonymous namespace)::count");
  EXPECT_EQ(name_without_signature("(anonymous namespace)::inner"), "(anonymous namespace)::inner");
}

TEST(Names, QualifiedWithoutTemplateArguments) {
  EXPECT_EQ(qualified_name("cudaError cudaLaunchKernel<char>(char const*, dim3)"), "cudaLaunchKernel");
  EXPECT_EQ(qualified_name("cudart::cudaApiMemcpyAsync(void*, void const*, unsigned long)"),
            "cudart::cudaApiMemcpyAsync");
  EXPECT_EQ(qualified_name("ns::A<int>::f<2>(int)"), "ns::A::f");
  EXPECT_EQ(qualified_name("(anonymous namespace)::foo(int)"), "(anonymous namespace)::foo");
  EXPECT_EQ(qualified_name("cudaMemcpyAsync"), "cudaMemcpyAsync");
}

TEST(Names, KernelDisplayNameKeepsNamespacesAndTemplates) {
  // The mangled name of void (anonymous namespace)::csr_partition_kernel<int, int>(int const*, int*):
  EXPECT_EQ(kernel_display_name("_ZN12_GLOBAL__N_120csr_partition_kernelIiiEEvPKT_PT0_"),
            "(anonymous namespace)::csr_partition_kernel<int, int>");
  EXPECT_EQ(kernel_display_name("_Z5dummyx"), "dummy");
  EXPECT_EQ(kernel_display_name("plain_c_kernel"), "plain_c_kernel");
}

TEST(Names, ShortenedInTheMiddle) {
  std::string name = "thrust::cuda_cub::core::_kernel_agent<" + std::string(400, 'x') + ", unsigned long>";
  std::string s = shorten_middle(name, 160);
  EXPECT_LE(s.size(), 160u);
  EXPECT_GE(s.size(), 120u);
  EXPECT_EQ(s.rfind("thrust::cuda_cub::core::_kernel_agent<", 0), 0u) << s;  // the front is kept
  EXPECT_EQ(s.substr(s.size() - 14), "unsigned long>");                      // and the end
  EXPECT_NE(s.find("..."), std::string::npos);
  EXPECT_EQ(shorten_middle("short", 160), "short");
  // between tokens when one is near
  std::string args = "f<";
  for (int i = 0; i < 40; ++i) args += "type" + std::to_string(i) + ", ";
  args += "last>";
  std::string cut = shorten_middle(args, 80);
  size_t dots = cut.find("...");
  ASSERT_NE(dots, std::string::npos) << cut;
  EXPECT_TRUE(cut[dots - 1] == ' ' || cut[dots - 1] == ',') << cut;
  EXPECT_TRUE(cut[dots + 3] == ',' || cut[dots + 3] == ' ') << cut;
  // never inside a UTF-8 sequence
  std::string utf8;
  for (int i = 0; i < 100; ++i) utf8 += "\xc3\xa9";  // é
  std::string u = shorten_middle(utf8, 21);
  EXPECT_LE(u.size(), 21u);
  for (size_t i = 0; i < u.size(); ++i)
    if (u[i] == '.')
      continue;
    else
      EXPECT_TRUE(static_cast<unsigned char>(u[i]) == 0xc3 ? (static_cast<unsigned char>(u[i + 1]) == 0xa9) : true);
  EXPECT_EQ(u.find("\xc3."), std::string::npos);
  EXPECT_EQ(u.find(".\xa9"), std::string::npos);
}
