// SPDX-License-Identifier: GPL-2.0
#include <curses.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>
#include <termios.h>
#include <unistd.h>

#include "live.h"

struct live {
	SCREEN *scr;
};

/* What live_restore_now() needs without ncurses: the modes before, terminfo's strings that
 * leave the full-screen mode and show the cursor, taken at open. */
static struct termios modes_before;
static char leave[128];
static size_t leave_len;
static volatile sig_atomic_t screen_open;

static void leave_add(const char *cap)
{
	char *s = tigetstr((char *)cap);
	size_t n;

	if (!s || s == (char *)-1)
		return;
	n = strlen(s);
	if (leave_len + n < sizeof(leave)) {
		memcpy(leave + leave_len, s, n);
		leave_len += n;
	}
}

struct live *live_open(char *why, int len)
{
	const char *term = getenv("TERM");
	struct live *l;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		snprintf(why, len, "stdin and stdout are not both a terminal");
		return NULL;
	}
	if (!term || !*term || !strcmp(term, "dumb")) {
		snprintf(why, len, "TERM is %s", term && *term ? "dumb" : "not set");
		return NULL;
	}
	if (tcgetattr(STDIN_FILENO, &modes_before)) {
		snprintf(why, len, "cannot read the terminal's modes: %m");
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	l->scr = newterm(NULL, stdout, stdin);
	if (!l->scr) {
		snprintf(why, len, "TERM '%s' is not in the terminfo database", term);
		free(l);
		return NULL;
	}
	leave_len = 0;
	leave_add("rmcup");
	leave_add("cnorm");
	cbreak();		/* Ctrl-C still signals: the usual stop */
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	screen_open = 1;
	return l;
}

void live_close(struct live *l)
{
	if (!l)
		return;
	screen_open = 0;
	curs_set(1);
	endwin();
	delscreen(l->scr);
	tcsetattr(STDIN_FILENO, TCSANOW, &modes_before);
	free(l);
}

void live_restore_now(void)
{
	if (!screen_open)
		return;
	screen_open = 0;
	/* the modes even when the screen's strings could not be written */
	if (leave_len && write(STDOUT_FILENO, leave, leave_len) < 0)
		leave_len = 0;
	tcsetattr(STDIN_FILENO, TCSANOW, &modes_before);
}

int live_key(struct live *l, int ms)
{
	int ch;

	timeout(ms);
	ch = getch();
	if (ch == ERR)
		return 0;
	return ch == KEY_RESIZE ? LIVE_KEY_RESIZE : ch;
}

void live_key_unknown(int key, char *buf, int len, const char *keys)
{
	if (key > 32 && key < 127)
		snprintf(buf, len, "unknown key '%c': %s", key, keys);
	else if (key >= 0 && key < 32)
		snprintf(buf, len, "unknown key ^%c: %s", key + 64, keys);
	else
		snprintf(buf, len, "unknown key (code %d): %s", key, keys);
}

void live_begin(struct live *l, int *rows, int *cols)
{
	erase();
	getmaxyx(stdscr, *rows, *cols);
}

void live_line(struct live *l, int row, bool bold, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (row >= LINES)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (bold)
		attron(A_BOLD);
	mvaddnstr(row, 0, buf, COLS);
	if (bold)
		attroff(A_BOLD);
}

void live_end(struct live *l)
{
	refresh();
}
