/*
 * Tiny unit-test harness: named cases, registered from any file with TEST(name).
 *
 *   #include "unit.h"
 *   TEST(util_parse_u64_signs) { CHECK_INT(parse_u64("-1", 0, 9, &v), -EINVAL); }
 *
 * Each case runs in its own forked child (a crash fails that case only). CHECK_*
 * record a failure and carry on; REQUIRE(cond) stops the case. See tests/README.md.
 */
#ifndef UDSPROBE_UNIT_H
#define UDSPROBE_UNIT_H

#include <stdint.h>
#include <string.h>

struct unit_test {
	const char *name;
	const char *file;
	void (*fn)(void);
	struct unit_test *next;
};

void unit_register(struct unit_test *t);
void unit_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void unit_abort(void) __attribute__((noreturn));

#define TEST(id)								\
	static void unit_fn_##id(void);					\
	static struct unit_test unit_case_##id = {				\
		.name = #id, .file = __FILE__, .fn = unit_fn_##id,		\
	};									\
	__attribute__((constructor)) static void unit_reg_##id(void)		\
	{									\
		unit_register(&unit_case_##id);				\
	}									\
	static void unit_fn_##id(void)

#define CHECK(cond)								\
	do {									\
		if (!(cond))							\
			unit_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);	\
	} while (0)

#define REQUIRE(cond)								\
	do {									\
		if (!(cond)) {							\
			unit_fail(__FILE__, __LINE__, "REQUIRE(%s)", #cond);	\
			unit_abort();						\
		}								\
	} while (0)

#define CHECK_INT(a, b)								\
	do {									\
		long long unit_a = (a), unit_b = (b);				\
		if (unit_a != unit_b)						\
			unit_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld",	\
				  #a, #b, unit_a, unit_b);			\
	} while (0)

#define CHECK_U64(a, b)								\
	do {									\
		unsigned long long unit_a = (a), unit_b = (b);			\
		if (unit_a != unit_b)						\
			unit_fail(__FILE__, __LINE__, "%s == %s: %llu != %llu",	\
				  #a, #b, unit_a, unit_b);			\
	} while (0)

#define CHECK_DBL(a, b, eps)							\
	do {									\
		double unit_a = (a), unit_b = (b);				\
		if (!(unit_a - unit_b <= (eps) && unit_b - unit_a <= (eps)))	\
			unit_fail(__FILE__, __LINE__, "%s == %s: %.17g != %.17g", \
				  #a, #b, unit_a, unit_b);			\
	} while (0)

#define CHECK_STR(a, b)								\
	do {									\
		const char *unit_a = (a), *unit_b = (b);			\
		if (!unit_a || !unit_b || strcmp(unit_a, unit_b))		\
			unit_fail(__FILE__, __LINE__, "%s == %s:\n  got:  \"%s\"\n  want: \"%s\"", \
				  #a, #b, unit_a ? unit_a : "(null)",		\
				  unit_b ? unit_b : "(null)");			\
	} while (0)

#endif
