// SPDX-License-Identifier: MIT
// A C++ process for symbolize_test: prints "fn NAME 0xADDRESS" for some of its functions,
// NAME as perf shows it demangled, then "ready", and exits at the end of its input.
#include <cstdint>
#include <cstdio>

namespace ns
{

struct Widget {
	static int run(int x);
	template <typename T> static T twice(T v);
};

__attribute__((noinline)) int Widget::run(int x)
{
	volatile int v = x;

	return v * 2;
}

template <typename T> __attribute__((noinline)) T Widget::twice(T v)
{
	volatile T t = v;

	return t + t;
}

template double Widget::twice<double>(double);

__attribute__((noinline)) int helper(const char *s)
{
	volatile char c = s[0];

	return c;
}

} // namespace ns

static void report(const char *name, std::uintptr_t addr)
{
	std::printf("fn %s %#llx\n", name, (unsigned long long)addr);
}

int main()
{
	char line[64];

	report("ns::Widget::run(int)", reinterpret_cast<std::uintptr_t>(&ns::Widget::run));
	report("double ns::Widget::twice<double>(double)",
	       reinterpret_cast<std::uintptr_t>(&ns::Widget::twice<double>));
	report("ns::helper(char const*)", reinterpret_cast<std::uintptr_t>(&ns::helper));
	std::printf("ready\n");
	std::fflush(stdout);
	while (std::fgets(line, sizeof(line), stdin))
		;
	return 0;
}
