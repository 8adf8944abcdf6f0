// SPDX-License-Identifier: GPL-2.0
/* outfile.c: temp-and-rename output, refusing links and non-regular targets. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"
#include "unit.h"

static int count_temps(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += !strncmp(de->d_name, ".udsprobe-", 10);
	closedir(d);
	return n;
}

static char *slurp(const char *path)
{
	static char buf[256];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static void quiet_stderr(void)
{
	if (!freopen("/dev/null", "w", stderr))
		return;
}

TEST(outfile_commit_replaces_the_target_whole)
{
	char dir[] = "/tmp/udsprobe-outfile-XXXXXX", path[300];
	struct outfile of;

	REQUIRE(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/r.txt", dir);
	fclose(fopen(path, "w"));
	REQUIRE(outfile_begin(&of, "--json", path) == 0);
	fputs("new", of.f);
	CHECK_STR(slurp(path), "");		/* nothing visible before the commit */
	CHECK_INT(count_temps(dir), 1);
	CHECK_INT(outfile_commit(&of, 0), 0);
	CHECK_STR(slurp(path), "new");
	CHECK_INT(count_temps(dir), 0);
	unlink(path);
	rmdir(dir);
}

TEST(outfile_failed_writer_leaves_the_old_file)
{
	char dir[] = "/tmp/udsprobe-outfile-XXXXXX", path[300];
	struct outfile of;

	REQUIRE(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/r.txt", dir);
	{
		FILE *f = fopen(path, "w");

		fputs("old", f);
		fclose(f);
	}
	REQUIRE(outfile_begin(&of, "--json", path) == 0);
	fputs("half", of.f);
	CHECK_INT(outfile_commit(&of, -ENODATA), -ENODATA);
	CHECK_STR(slurp(path), "old");
	CHECK_INT(count_temps(dir), 0);
	unlink(path);
	rmdir(dir);
}

TEST(outfile_refuses_symlink_and_device)
{
	char dir[] = "/tmp/udsprobe-outfile-XXXXXX", path[300], victim[300];
	struct outfile of;

	quiet_stderr();
	REQUIRE(mkdtemp(dir));
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(path, sizeof(path), "%s/link", dir);
	fclose(fopen(victim, "w"));
	REQUIRE(symlink(victim, path) == 0);
	CHECK_INT(outfile_begin(&of, "--json", path), -ELOOP);
	CHECK_INT(outfile_check("--json", path), -ELOOP);
	CHECK_INT(outfile_begin(&of, "--json", "/dev/null"), -EINVAL);
	CHECK_INT(outfile_check("--json", dir), -EISDIR);
	CHECK_INT(count_temps(dir), 0);
	unlink(path);
	unlink(victim);
	rmdir(dir);
}

TEST(outfile_remove_pending_removes_temporaries)
{
	char dir[] = "/tmp/udsprobe-outfile-XXXXXX", path[300];
	struct outfile of;

	quiet_stderr();
	REQUIRE(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/r.txt", dir);
	REQUIRE(outfile_begin(&of, "--json", path) == 0);
	fputs("x", of.f);
	CHECK_INT(count_temps(dir), 1);
	outfile_remove_pending();	/* what the second Ctrl-C does */
	CHECK_INT(count_temps(dir), 0);
	CHECK(outfile_commit(&of, 0) < 0);	/* the temp is gone: nothing is renamed */
	CHECK(access(path, F_OK) != 0);
	rmdir(dir);
}

TEST(outdir_removes_only_an_empty_dir_it_created)
{
	char base[] = "/tmp/udsprobe-outfile-XXXXXX", dir[300], f[320];
	struct outdir od;

	REQUIRE(mkdtemp(base));
	snprintf(dir, sizeof(dir), "%s/rep", base);
	REQUIRE(outdir_open(&od, "--out", dir) == 0);
	CHECK(od.created);
	outdir_close(&od, true);
	CHECK(access(dir, F_OK) != 0);
	REQUIRE(mkdir(dir, 0755) == 0);
	REQUIRE(outdir_open(&od, "--out", dir) == 0);
	CHECK(!od.created);
	outdir_close(&od, true);
	CHECK(access(dir, F_OK) == 0);	/* not ours: stays */
	snprintf(f, sizeof(f), "%s/link", base);
	REQUIRE(symlink(dir, f) == 0);
	quiet_stderr();
	CHECK(outdir_open(&od, "--out", f) < 0);
	unlink(f);
	rmdir(dir);
	rmdir(base);
}
