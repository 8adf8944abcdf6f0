// SPDX-License-Identifier: GPL-2.0
/*
 * Safe output files (outfile.h). udsprobe runs as root and is pointed at paths in
 * directories other users may write (/tmp, a shared report directory): every file is
 * created under a fresh name with O_EXCL|O_NOFOLLOW and renamed over its target, which
 * replaces a planted symlink instead of writing through it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"
#include "util.h"

#define TMP_PREFIX ".udsprobe-"
#define MAX_PENDING 8

/* Temporary files being written, for the fatal-signal path (a second Ctrl-C). */
static struct {
	volatile sig_atomic_t used;
	int dirfd;
	char tmp[TMP_LEN];
} pending[MAX_PENDING];
/* The --out directory udsprobe made, while open: removed with them if it is still empty. */
static const char *volatile made_dir;

void outfile_remove_pending(void)
{
	int i;

	for (i = 0; i < MAX_PENDING; i++)
		if (pending[i].used)
			unlinkat(pending[i].dirfd, pending[i].tmp, 0);
	if (made_dir)
		rmdir(made_dir);	/* fails, as it should, when a finished file is inside */
}

static int pending_add(int dirfd, const char tmp[TMP_LEN])
{
	int i;

	for (i = 0; i < MAX_PENDING; i++) {
		if (pending[i].used)
			continue;
		pending[i].dirfd = dirfd;
		memcpy(pending[i].tmp, tmp, sizeof(pending[i].tmp));
		pending[i].used = 1;	/* last: the handler sees a complete entry */
		return i;
	}
	return -1;	/* more than MAX_PENDING at once: still safe, only not cleaned on a signal */
}

static void pending_del(int slot)
{
	if (slot >= 0)
		pending[slot].used = 0;
}

bool sudo_ids(uid_t *uid, gid_t *gid)
{
	const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
	uint64_t u, g;

	if (geteuid() || !su || !sg || parse_u64(su, 1, UINT32_MAX - 1, &u) ||
	    parse_u64(sg, 0, UINT32_MAX - 1, &g))
		return false;
	*uid = u;
	*gid = g;
	return true;
}

/* Hand a file udsprobe created to the user who ran sudo; best effort (root keeps it). */
static void give_back(int fd)
{
	uid_t uid;
	gid_t gid;

	if (sudo_ids(&uid, &gid) && fchown(fd, uid, gid))
		return;
}

/* Create a fresh temporary file in dirfd; fd or -errno. */
static int create_tmp(int dirfd, char *tmp, size_t len)
{
	static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char rnd[8];
	int tries, i, fd;

	for (tries = 0; tries < 100; tries++) {
		if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd)) {
			uint64_t x = now_ns() ^ ((uint64_t)getpid() << 32) ^ tries;

			memcpy(rnd, &x, sizeof(rnd));
		}
		i = snprintf(tmp, len, TMP_PREFIX);
		for (int k = 0; k < 8; k++)
			tmp[i++] = digits[rnd[k] % (sizeof(digits) - 1)];
		snprintf(tmp + i, len - i, ".tmp");
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

/*
 * SIGINT and SIGTERM held back while a temporary file exists but is not yet known to the
 * fatal-signal path (pending[]), so that a second Ctrl-C can never leave it behind.
 */
static void hold_signals(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, old);
}

static void release_signals(const sigset_t *old)
{
	sigprocmask(SIG_SETMASK, old, NULL);
}

/* Can we create files in dirfd? A real create and unlink: root ignores modes, not read-only
 * mounts. 0 or -errno. */
static int probe_create(int dirfd)
{
	char tmp[TMP_LEN];
	sigset_t old;
	int fd;

	hold_signals(&old);
	fd = create_tmp(dirfd, tmp, sizeof(tmp));
	if (fd >= 0) {
		close(fd);
		unlinkat(dirfd, tmp, 0);
	}
	release_signals(&old);
	return fd < 0 ? fd : 0;
}

/* The target may be absent or a regular file; never a symlink, device, fifo or directory. */
static int target_ok(const char *what, int dirfd, const char *name, const char *path)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		if (errno == ENOENT)
			return 0;
		say_error("%s: cannot check '%s': %s", what, path, strerror(errno));
		return -errno;
	}
	if (S_ISLNK(st.st_mode)) {
		say_error("%s: '%s' is a symbolic link; udsprobe does not write through "
			"links (one planted by another user could make root overwrite any file): remove "
			"it or give the real path", what, path);
		return -ELOOP;
	}
	if (!S_ISREG(st.st_mode)) {
		say_error("%s: '%s' exists and is not a regular file; give a file "
			"path ('-' writes to standard output)", what, path);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	return 0;
}

/* Open the directory part of path; *name points at the last component. fd or -errno. */
static int open_parent(const char *what, const char *path, const char **name)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd;

	*name = slash ? slash + 1 : path;
	if (!**name || !strcmp(*name, ".") || !strcmp(*name, "..")) {
		say_error("%s: '%s' names a directory; give a file path", what, path);
		return -EISDIR;
	}
	if (strlen(*name) > NAME_MAX || strlen(path) >= PATH_MAX) {
		say_error("%s: '%s': %s", what, path, strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;

		say_error("%s: cannot write '%s': directory '%s': %s", what, path, dir,
			strerror(errno));
		return err;
	}
	return fd;
}

int outfile_begin_at(struct outfile *of, const char *what, int dirfd, const char *dirpath,
		     const char *name)
{
	sigset_t old;
	int fd, err;

	memset(of, 0, sizeof(*of));
	of->dirfd = dirfd;
	of->slot = -1;
	of->what = what;
	snprintf(of->name, sizeof(of->name), "%s", name);
	if (dirpath)
		snprintf(of->path, sizeof(of->path), "%s/%s", dirpath, name);
	else
		snprintf(of->path, sizeof(of->path), "%s", name);
	err = target_ok(what, dirfd, name, of->path);
	if (err)
		return err;
	hold_signals(&old);
	fd = create_tmp(dirfd, of->tmp, sizeof(of->tmp));
	if (fd >= 0)
		of->slot = pending_add(dirfd, of->tmp);
	release_signals(&old);
	if (fd < 0) {
		say_error("%s: cannot write '%s': %s", what, of->path,
			strerror(-fd));
		return fd;
	}
	give_back(fd);
	of->f = fdopen(fd, "w");
	if (!of->f) {
		err = -errno;
		close(fd);
		unlinkat(dirfd, of->tmp, 0);
		pending_del(of->slot);
		say_error("%s: cannot write '%s': %s", what, of->path,
			strerror(-err));
		return err;
	}
	return 0;
}

int outfile_begin(struct outfile *of, const char *what, const char *path)
{
	const char *name;
	int dirfd, err;

	if (!strcmp(path, "-")) {
		memset(of, 0, sizeof(*of));
		of->f = stdout;
		of->to_stdout = true;
		of->dirfd = -1;
		of->slot = -1;
		of->what = what;
		snprintf(of->path, sizeof(of->path), "standard output");
		return 0;
	}
	dirfd = open_parent(what, path, &name);
	if (dirfd < 0)
		return dirfd;
	err = outfile_begin_at(of, what, dirfd, NULL, name);
	snprintf(of->path, sizeof(of->path), "%s", path);
	if (err) {
		close(dirfd);
		return err;
	}
	of->own_dirfd = true;
	return 0;
}

int outfile_commit(struct outfile *of, int err)
{
	int werr = 0;

	if (!of->f)
		return err;
	if (fflush(of->f))
		werr = -errno;
	else if (ferror(of->f))
		werr = -EIO;
	if (of->to_stdout) {
		of->f = NULL;
		if (werr && !err)
			say_error("%s: writing to standard output failed: %s",
				of->what, strerror(-werr));
		clearerr(stdout);	/* said here; close_stdout() need not say it again */
		return err ? err : werr;
	}
	if (fclose(of->f) && !werr)
		werr = -errno;
	of->f = NULL;
	if (!err && !werr)
		werr = target_ok(of->what, of->dirfd, of->name, of->path);	/* changed meanwhile? */
	else if (werr && !err)
		say_error("%s: writing '%s' failed: %s", of->what, of->path,
			strerror(-werr));
	if (!err && !werr && renameat(of->dirfd, of->tmp, of->dirfd, of->name)) {
		werr = -errno;
		say_error("%s: cannot write '%s': %s", of->what, of->path,
			strerror(-werr));
	}
	if (err || werr)
		unlinkat(of->dirfd, of->tmp, 0);
	pending_del(of->slot);
	of->slot = -1;
	if (of->own_dirfd)
		close(of->dirfd);
	of->dirfd = -1;
	return err ? err : werr;
}

int outfile_check(const char *what, const char *path)
{
	const char *name;
	int dirfd, err;

	if (!strcmp(path, "-"))
		return 0;
	dirfd = open_parent(what, path, &name);
	if (dirfd < 0)
		return dirfd;
	err = target_ok(what, dirfd, name, path);
	if (!err) {
		err = probe_create(dirfd);
		if (err)
			say_error("%s: cannot write '%s': %s", what, path,
				strerror(-err));
	}
	close(dirfd);
	return err;
}

int outdir_open(struct outdir *od, const char *what, const char *dir)
{
	struct stat st;
	int err;

	memset(od, 0, sizeof(*od));
	od->fd = -1;
	if (strlen(dir) >= sizeof(od->path)) {
		say_error("%s: '%s': %s", what, dir, strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	snprintf(od->path, sizeof(od->path), "%s", dir);
	if (mkdir(dir, 0755) == 0) {
		od->created = true;
	} else if (errno != EEXIST) {
		err = -errno;
		say_error("%s: cannot create directory '%s': %s", what, dir,
			strerror(errno));
		return err;
	}
	od->fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (od->fd < 0) {
		err = -errno;
		/* O_DIRECTORY|O_NOFOLLOW on a symlink fails with ENOTDIR on Linux, not ELOOP */
		if (errno == ELOOP || (errno == ENOTDIR && !lstat(dir, &st) && S_ISLNK(st.st_mode)))
			say_error("%s: '%s' is a symbolic link; udsprobe does not write "
				"through links: give the directory itself", what, dir);
		else if (errno == ENOTDIR)
			say_error("%s: '%s' exists and is not a directory", what, dir);
		else
			say_error("%s: cannot open directory '%s': %s", what, dir,
				strerror(errno));
		return err;
	}
	/* only a directory this process made (and still owns) goes to the sudo user */
	if (od->created && !fstat(od->fd, &st) && st.st_uid == geteuid())
		give_back(od->fd);
	err = probe_create(od->fd);
	if (err) {
		say_error("%s: cannot write into '%s': %s", what, dir,
			strerror(-err));
		outdir_close(od, true);
	} else if (od->created) {
		made_dir = od->path;
	}
	return err;
}

void outdir_close(struct outdir *od, bool remove_if_empty)
{
	if (od->fd >= 0)
		close(od->fd);
	od->fd = -1;
	if (made_dir == od->path)
		made_dir = NULL;
	if (od->created && remove_if_empty)
		rmdir(od->path);	/* fails, as it should, when anything is inside */
}

void stdio_fds_guard(void)
{
	int fd;

	for (fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF &&
		    open("/dev/null", O_RDONLY) != fd) {	/* the lowest free fd: this one */
			/* lost if stderr is the closed one; the exit status still says it */
			dprintf(2, "udsprobe: standard input, output or error is closed and /dev/null "
				"cannot be opened in its place: %s\n", strerror(errno));
			_exit(1);
		}
}

static int stdout_err;

int fflush_noted(FILE *f)
{
	int r = fflush(f);

	if (r && f == stdout && !stdout_err)
		stdout_err = errno;
	return r;
}

int stdout_errno(void)
{
	return stdout_err;
}

int stdout_flush_report(void)
{
	int err;

	if (!fflush(stdout) && !ferror(stdout))
		return 0;
	err = errno ? -errno : -EIO;
	say_error("writing the report to standard output failed: %s",
		strerror(-err));
	clearerr(stdout);
	return err;
}

void close_stdout(void)
{
	bool failed = ferror(stdout);
	int err = stdout_err ? stdout_err : EIO;

	if (fflush(stdout)) {
		failed = true;
		err = errno;
	}
	if (fclose(stdout) && errno != EBADF && !failed) {
		failed = true;
		err = errno;
	}
	if (failed) {
		say_error("writing to standard output failed: %s", strerror(err));
		_exit(1);
	}
}
