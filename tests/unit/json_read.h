/* Test-only JSON reader (json_read.c): a tree of nodes, looked up by key. */
#ifndef UDSPROBE_TEST_JSON_READ_H
#define UDSPROBE_TEST_JSON_READ_H

#include <stdbool.h>

enum jtype { J_NULL, J_BOOL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT };

struct jnode {
	enum jtype type;
	char *key;		/* member name inside an object, else NULL */
	char *str;		/* J_STRING */
	double num;		/* J_NUMBER */
	bool boolean;		/* J_BOOL */
	struct jnode *child;	/* first member / item of J_OBJECT / J_ARRAY */
	struct jnode *next;	/* next sibling */
};

/* 0 or -EINVAL (malformed, or trailing text) / -ENOMEM. */
int jparse(const char *text, struct jnode **out);
void jfree(struct jnode *n);
/* Member of an object, or NULL. */
const struct jnode *jget(const struct jnode *obj, const char *key);
/* A number / string member, or dflt / NULL when absent or of another type. */
double jnum(const struct jnode *obj, const char *key, double dflt);
const char *jstr(const struct jnode *obj, const char *key);

#endif
