/*
 * A full-screen view redrawn every interval (--trace --live), on ncurses: the caller draws
 * lines, the screen keeps the terminal's state and gives it back as it was.
 */
#ifndef UDSPROBE_LIVE_H
#define UDSPROBE_LIVE_H

#include <stdbool.h>

struct live;

/* The screen on stdout when stdin and stdout are a terminal ncurses knows; NULL otherwise
 * (the caller prints plain text), with why set. */
struct live *live_open(char *why, int len);
/* The terminal as it was before live_open (NULL: nothing). */
void live_close(struct live *l);
/* From a signal handler about to end the process: the terminal modes and the screen as they
 * were, with async-signal-safe calls only (no-op when no screen is open). */
void live_restore_now(void);

/* A key pressed within ms milliseconds (0: none came). A resize is handled here (the next
 * frame has the new size) and returns LIVE_KEY_RESIZE. */
#define LIVE_KEY_RESIZE (-2)
int live_key(struct live *l, int ms);

/* "unknown key 'x': KEYS" (a control key as ^X, others by number) into buf, for the view's
 * own line. */
void live_key_unknown(int key, char *buf, int len, const char *keys);

/* A frame: begin (the screen's size), lines, end (drawn at once). A line longer than the
 * screen is cut; lines beyond the last row are dropped. */
void live_begin(struct live *l, int *rows, int *cols);
void live_line(struct live *l, int row, bool bold, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void live_end(struct live *l);

#endif
