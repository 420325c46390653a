/* SPDX-License-Identifier: MIT */
/*
 * The libFuzzer entry point, shared by each target and replay_main.c, which runs a
 * committed corpus through the same function as an ordinary test. A target returns 0 and
 * abort()s when a property it checks does not hold.
 */
#ifndef XPUSUP_TESTS_FUZZ_H
#define XPUSUP_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* XPUSUP_TESTS_FUZZ_H */
