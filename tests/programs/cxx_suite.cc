// Exercises the UKL C++ runtime: static constructors, iostream,
// std::thread, exceptions. Prints "ok NAME" per check.
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

static int constructed;
struct Global {
	Global() { constructed = 1234; }
};
static Global global;

#define CHECK(name, cond) do { \
	if (!(cond)) { std::cout << "FAIL " << name << std::endl; std::exit(1); } \
	std::cout << "ok " << name << std::endl; \
} while (0)

int main()
{
	CHECK("static-ctor", constructed == 1234);
	std::string s = "ukl";
	s += std::to_string(42);
	CHECK("iostream-string", s == "ukl42");

	std::atomic<int> sum{0};
	std::vector<std::thread> threads;
	for (int i = 1; i <= 4; i++)
		threads.emplace_back([&sum, i] { sum += i; });
	for (auto &t : threads)
		t.join();
	CHECK("std-thread", sum == 10);

	bool caught = false;
	try {
		throw std::runtime_error("boom");
	} catch (const std::exception &e) {
		caught = std::string(e.what()) == "boom";
	}
	CHECK("exception", caught);
	std::cout << "cxx_suite: all passed" << std::endl;
	return 0;
}
