# udsprobe — one Makefile: BPF objects, skeletons, the binary, tests, benchmarks.
CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= gcc
PKG_CONFIG ?= pkg-config
HOST_ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
ARCH ?= $(HOST_ARCH)
# Cross builds (make ARCH=arm64 [static]) go to .output/<arch>/, binaries included, with
# Debian's cross compiler and the :<arch> libraries (docs/KERNELS.md, "arm64").
TRIPLET_x86 := x86_64-linux-gnu
TRIPLET_arm64 := aarch64-linux-gnu
ifeq ($(ARCH),$(HOST_ARCH))
OUTPUT ?= .output
BIN := udsprobe
HELP_BIN := $(BIN)
else
OUTPUT ?= .output/$(ARCH)
BIN := $(OUTPUT)/udsprobe
# --help reads the same on every architecture: a cross build's man page comes from the host's
# own build of this tree, which runs here (make install ARCH=arm64 from an x86 host)
HELP_BIN := udsprobe
CROSS_COMPILE ?= $(TRIPLET_$(ARCH))-
CC := $(CROSS_COMPILE)gcc
PKG_CONFIG := PKG_CONFIG_LIBDIR=/usr/lib/$(TRIPLET_$(ARCH))/pkgconfig:/usr/share/pkgconfig pkg-config
endif
STATIC_BIN := $(BIN)-static
VERSION := 0.1.0$(shell git describe --always --dirty 2>/dev/null | sed 's/^/ (git /; s/$$/)/')

ifeq ($(wildcard vmlinux/$(ARCH)/vmlinux.h),)
$(error unsupported ARCH '$(ARCH)': no vmlinux/$(ARCH)/vmlinux.h (generate it with scripts/gen-vmlinux.sh))
endif

# ncursesw: --trace --live's full-screen view (user/lib/live.c)
LIBS := $(shell $(PKG_CONFIG) --libs libbpf 2>/dev/null || echo -lbpf) -lelf -lz -lm \
	$(shell $(PKG_CONFIG) --libs ncursesw 2>/dev/null || echo -lncursesw -ltinfo)
# make static: libbpf, libelf, zlib, ncursesw (and whatever their .pc files list) and glibc
STATIC_LIBS := $(shell $(PKG_CONFIG) --static --libs libbpf libelf zlib ncursesw 2>/dev/null || \
	echo -lbpf -lelf -lz -lncursesw -ltinfo) -lm
CFLAGS ?= -g -O2 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
# user/ holds main and the command line, user/<job>/ and user/lib/ the rest (docs/ARCHITECTURE.md);
# every folder is on the include path, so `#include "util.h"` names a header by file alone
# (before bpf/: "backlog.h" is user/backlog/backlog.h; bpf/backlog.h is "../bpf/backlog.h").
USER_DIRS := user $(patsubst %/,%,$(sort $(wildcard user/*/)))
ALL_CFLAGS := $(CFLAGS) -std=gnu11 -D_GNU_SOURCE -DUDSPROBE_VERSION='"$(VERSION)"' \
	-I$(OUTPUT) $(addprefix -I,$(USER_DIRS)) -Ibpf -MMD -MP
# clang -target bpf does not search the host's include dirs; add what it would for the host.
CLANG_BPF_SYS_INCLUDES ?= $(shell $(CLANG) -v -E - </dev/null 2>&1 \
	| sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')
BPF_CFLAGS := -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Ibpf -Ibpf/lib \
	$(CLANG_BPF_SYS_INCLUDES) -MMD -MP

BPF_APPS := $(patsubst bpf/%.bpf.c,%,$(wildcard bpf/*.bpf.c))
BPF_OBJS := $(patsubst %,$(OUTPUT)/%.bpf.o,$(BPF_APPS))
SKELS := $(patsubst %,$(OUTPUT)/%.skel.h,$(BPF_APPS))
USER_SRCS := $(wildcard $(addsuffix /*.c,$(USER_DIRS)))
USER_OBJS := $(patsubst user/%.c,$(OUTPUT)/user/%.o,$(USER_SRCS))
LIB_OBJS := $(filter-out $(OUTPUT)/user/udsprobe.o,$(USER_OBJS))
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_BIN := $(OUTPUT)/unit_tests
BENCH_BIN := $(OUTPUT)/bench_pingpong
FLOOR_BIN := $(OUTPUT)/hooks_floor

ifeq ($(V),1)
	Q =
	msg =
else
	Q = @
	msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.PHONY: all static clean test test-unit test-integration test-vm bench check-deps man install \
	uninstall deb examples
all: $(BIN)

$(BIN): $(USER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ $(LIBS) -o $@

# One file to copy to a host: no shared library needed there (docs/KERNELS.md, README).
static: $(STATIC_BIN)

$(STATIC_BIN): $(USER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -static $^ $(STATIC_LIBS) -o $@

$(OUTPUT) $(addprefix $(OUTPUT)/,$(USER_DIRS)) $(OUTPUT)/tests:
	$(Q)mkdir -p $@

# The Makefile is an input too: its flags, and its paths (after headers move, old .d files name
# paths that are gone, which .SECONDARY: lets pass without a rebuild).
$(OUTPUT)/%.bpf.o: bpf/%.bpf.c vmlinux/$(ARCH)/vmlinux.h Makefile | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# VERSION is compiled in (reports name the commit their figures came from): the objects that
# print it are rebuilt when it changes, a new commit or a tree turning dirty, not only when
# their own source does. The stamp is rewritten only then.
VERSION_STAMP := $(OUTPUT)/version.stamp
$(shell mkdir -p $(OUTPUT) && (echo '$(VERSION)' | cmp -s - $(VERSION_STAMP) || \
	echo '$(VERSION)' > $(VERSION_STAMP)))
$(patsubst user/%.c,$(OUTPUT)/user/%.o,$(shell grep -l UDSPROBE_VERSION $(USER_SRCS))): \
	$(VERSION_STAMP)

# Every user object may include any skeleton; -MMD records which it really does.
$(OUTPUT)/user/%.o: user/%.c $(SKELS) Makefile | $(addprefix $(OUTPUT)/,$(USER_DIRS))
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(OUTPUT)/tests/%.o: tests/unit/%.c $(SKELS) Makefile | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

# test_layers.c reads every user object's symbols (nm), udsprobe.o's too
$(OUTPUT)/tests/test_layers.o: ALL_CFLAGS += -DUSER_OBJ_DIR='"$(OUTPUT)/user"'
$(UNIT_BIN): $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%.o,$(UNIT_SRCS)) $(LIB_OBJS) \
		| $(OUTPUT)/user/udsprobe.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ $(LIBS) -o $@

$(BENCH_BIN): scripts/bench_pingpong.c | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< -o $@

# The bench's floor: empty programs on --trace's hooks, chosen by udsprobe's own code.
$(FLOOR_BIN): scripts/hooks_floor.c $(LIB_OBJS) $(SKELS) | $(OUTPUT)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< $(LIB_OBJS) $(LIBS) -o $@

# Installed like a system tool: make install [PREFIX=/usr/local] [DESTDIR=] puts the binary,
# udsprobe(8) (scripts/man/udsprobe-man.py: from --help itself, it cannot drift), the
# bash completion (options read from --help too) and the --backlog service unit where
# distributions expect them; make deb builds the Debian package (scripts/build-deb.sh).
PREFIX ?= /usr/local
MAN := $(OUTPUT)/udsprobe.8
man: $(MAN)

$(MAN): $(HELP_BIN) scripts/man/udsprobe-man.py scripts/man/udsprobe.sections
	$(call msg,MAN,$@)
	$(Q)scripts/man/udsprobe-man.py ./$(HELP_BIN) scripts/man/udsprobe.sections > $@.tmp && mv $@.tmp $@

ifneq ($(ARCH),$(HOST_ARCH))
.PHONY: udsprobe
udsprobe:
	$(Q)$(MAKE) --no-print-directory ARCH=$(HOST_ARCH) OUTPUT=.output udsprobe
endif

UNITS := udsprobe-backlog.service udsprobe-trace.service	# examples, not enabled on install

install: $(BIN) $(MAN)
	$(Q)install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/sbin/udsprobe
	$(Q)install -D -m 0644 $(MAN) $(DESTDIR)$(PREFIX)/share/man/man8/udsprobe.8
	$(Q)install -D -m 0644 scripts/completion/udsprobe.bash \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/udsprobe
	$(Q)mkdir -p $(DESTDIR)$(PREFIX)/lib/systemd/system
	$(Q)for u in $(UNITS); do \
		sed 's|/usr/local/bin/udsprobe|$(PREFIX)/sbin/udsprobe|' scripts/$$u \
			> $(DESTDIR)$(PREFIX)/lib/systemd/system/$$u && \
		chmod 0644 $(DESTDIR)$(PREFIX)/lib/systemd/system/$$u || exit 1; \
	done

uninstall:
	$(Q)rm -f $(DESTDIR)$(PREFIX)/sbin/udsprobe $(DESTDIR)$(PREFIX)/share/man/man8/udsprobe.8 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/udsprobe \
		$(addprefix $(DESTDIR)$(PREFIX)/lib/systemd/system/,$(UNITS))

deb:
	$(Q)scripts/build-deb.sh

test-unit: $(UNIT_BIN)
	$(Q)$(UNIT_BIN)

test-integration: udsprobe
	$(Q)tests/run.sh integration

test-vm: udsprobe
	$(Q)tests/run.sh vm

# The README's test command: unit, host integration (tracepoint mode), VM kernel matrix.
test: udsprobe $(UNIT_BIN)
	$(Q)tests/run.sh all

bench: udsprobe $(BENCH_BIN) $(FLOOR_BIN)
	$(Q)scripts/bench.sh

# The README's example outputs and docs/example-report/, from this build (scripts/examples.py).
examples: udsprobe
	$(Q)scripts/examples.py

clean:
	$(call msg,CLEAN,)
	$(Q)rm -rf $(OUTPUT)/*.o $(OUTPUT)/*.d $(OUTPUT)/*.skel.h $(OUTPUT)/user $(OUTPUT)/tests \
		$(UNIT_BIN) $(BENCH_BIN) $(FLOOR_BIN) $(MAN) $(OUTPUT)/deb udsprobe udsprobe-static

.DELETE_ON_ERROR:
.SECONDARY:

-include $(wildcard $(OUTPUT)/*.d $(addprefix $(OUTPUT)/,$(addsuffix /*.d,$(USER_DIRS))) \
	$(OUTPUT)/tests/*.d)
