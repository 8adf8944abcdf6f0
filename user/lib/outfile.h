/*
 * Output files a root process can write safely in directories other users may write:
 * never through a symlink, never over something that is not a regular file, always to a
 * fresh temporary name (O_EXCL) renamed over the target when complete, so a reader sees
 * the old file or the whole new one and a planted link cannot redirect the write.
 * docs/RELIABILITY.md describes the promises.
 */
#ifndef UDSPROBE_OUTFILE_H
#define UDSPROBE_OUTFILE_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#define TMP_LEN 32	/* ".udsprobe-XXXXXXXX.tmp" */

struct outfile {
	FILE *f;		/* write here; stdout for "-" */
	int dirfd;		/* directory of the file (borrowed from an outdir, or owned) */
	bool own_dirfd;
	bool to_stdout;
	int slot;		/* pending-temp registry entry, -1 when none */
	const char *what;	/* "--json", "--out" ...: named in messages */
	char path[PATH_MAX];	/* as the user sees it, for messages */
	char name[NAME_MAX + 1];	/* final name in dirfd */
	char tmp[TMP_LEN];		/* temporary name in dirfd */
};

/*
 * Before a long run: can `path` be written ("-" always can)? Its directory must exist and be
 * writable, and path must not be a symlink or a non-regular file. 0 or -errno, the reason
 * printed as "udsprobe: WHAT: ...".
 */
int outfile_check(const char *what, const char *path);
/* Start writing path ("-" = stdout). 0 or -errno (message printed). */
int outfile_begin(struct outfile *of, const char *what, const char *path);
/* The same for name inside an open directory (dirpath only for messages). */
int outfile_begin_at(struct outfile *of, const char *what, int dirfd, const char *dirpath,
		     const char *name);
/*
 * Finish: flush, check every write, and rename the temporary file over the target; with
 * err != 0 (the caller's own failure) or on any write error the temporary file is removed
 * and the target left as it was. Returns err, or the write error (message printed).
 */
int outfile_commit(struct outfile *of, int err);

/* A directory for --out. */
struct outdir {
	int fd;
	bool created;		/* udsprobe made it (so it may be handed to the sudo user) */
	char path[PATH_MAX];
};
/* Create (one level) or open dir, refusing a symlink or a non-directory. 0 or -errno. */
int outdir_open(struct outdir *od, const char *what, const char *dir);
/* Close it; remove it too when udsprobe created it and wrote nothing into it. */
void outdir_close(struct outdir *od, bool remove_if_empty);

/* When run through sudo as root: the invoking user's ids. False otherwise. */
bool sudo_ids(uid_t *uid, gid_t *gid);

/* Async-signal-safe: remove every temporary file still being written (fatal signal path). */
void outfile_remove_pending(void);

/*
 * At start, before anything is opened: /dev/null, read-only, onto whichever of fds 0-2 is
 * closed, so that no file udsprobe opens (the --compare lock) becomes stdout; a write to it
 * still fails (EBADF) as on the closed descriptor, and that failure is said.
 */
void stdio_fds_guard(void);

/* fflush(f), keeping the reason of stdout's first failure for close_stdout() (stdio keeps
 * only an error flag: "> /dev/full" was said as "Input/output error"). */
int fflush_noted(FILE *f);
/* That reason (an errno), or 0. */
int stdout_errno(void);

/* Flush stdout after a report: 0, or -errno after saying so once (close_stdout() then says
 * nothing more). */
int stdout_flush_report(void);

/*
 * Standard output at exit: flush and close it, and exit 1 with a message when anything
 * written to it was lost (`udsprobe ... > /dev/full`). Registered with atexit() by main.
 */
void close_stdout(void);

#endif
