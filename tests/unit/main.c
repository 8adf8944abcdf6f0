// SPDX-License-Identifier: GPL-2.0
/*
 * unit_tests [--list] [--no-fork] [-v] [NAME|GLOB ...]
 * Runs every registered case (or those matching the arguments, fnmatch globs) and ends with
 * "N passed, N failed". Exit 0 when nothing failed, 1 on failures, 2 on bad usage.
 */
#include <fnmatch.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

static struct unit_test *head, **tail = &head;
static int case_failures;

void unit_register(struct unit_test *t)
{
	/* keep registration order: link order of files, definition order within one */
	t->next = NULL;
	*tail = t;
	tail = &t->next;
}

void unit_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	printf("    %s:%d: ", file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	case_failures++;
}

void unit_abort(void)
{
	fflush(NULL);
	_exit(1);
}

static bool selected(const struct unit_test *t, int argc, char **argv)
{
	int i;

	if (!argc)
		return true;
	for (i = 0; i < argc; i++)
		if (!fnmatch(argv[i], t->name, 0))
			return true;
	return false;
}

/* 0 passed, 1 failed. */
static int run_one(const struct unit_test *t, bool fork_each)
{
	int status;
	pid_t pid;

	fflush(NULL);
	if (!fork_each) {
		case_failures = 0;
		t->fn();
		return case_failures ? 1 : 0;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		case_failures = 0;
		t->fn();
		fflush(NULL);
		_exit(case_failures ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) < 0) {
		perror("waitpid");
		return 1;
	}
	if (WIFSIGNALED(status)) {
		printf("    crashed: signal %d (%s)\n", WTERMSIG(status),
			strsignal(WTERMSIG(status)));
		return 1;
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	bool list = false, fork_each = true, verbose = false;
	int passed = 0, failed = 0, matched = 0, i, n = 0;
	struct unit_test *t;
	char **pats = calloc(argc, sizeof(*pats));

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--list") || !strcmp(argv[i], "-l")) {
			list = true;
		} else if (!strcmp(argv[i], "--no-fork")) {
			fork_each = false;
		} else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			verbose = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: %s [--list] [--no-fork] [-v] [NAME|GLOB ...]\n"
			       "Run the unit tests (all, or those named); last line: N passed, N failed\n",
			       argv[0]);
			return 0;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "unit_tests: unknown option '%s'\n", argv[i]);
			return 2;
		} else {
			pats[n++] = argv[i];
		}
	}

	for (t = head; t; t = t->next) {
		if (!selected(t, n, pats))
			continue;
		matched++;
		if (list) {
			printf("%s\n", t->name);
			continue;
		}
		if (run_one(t, fork_each)) {
			printf("FAIL %s (%s)\n", t->name, t->file);
			failed++;
		} else {
			if (verbose)
				printf("ok   %s\n", t->name);
			passed++;
		}
	}
	if (list)
		return matched || !n ? 0 : 2;
	for (i = 0; i < n; i++) {
		bool any = false;

		for (t = head; t && !any; t = t->next)
			any = !fnmatch(pats[i], t->name, 0);
		if (!any) {
			printf("FAIL %s: no such test (see --list)\n", pats[i]);
			failed++;
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	free(pats);
	return failed ? 1 : 0;
}
