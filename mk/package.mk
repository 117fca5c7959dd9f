# mk/package.mk: distribution: man pages, xalloc-enable, the example systemd
# drop-in and /etc/xalloc.conf (install rules), the .deb and .rpm packages,
# and the end-to-end test that boots systemd in a container (make e2e).
#
#   make deb        build/deb/*.deb from an export of the tree, then lintian
#   make rpm        build/rpm/RPMS/*/*.rpm (rpmbuild --nodeps), then rpmlint
#   make e2e        deb + rpm + tests/e2e/run.sh (systemd-nspawn, dnf); root.
#                   About 1 min 45 s with the cached debootstrapped root
#                   (build/e2e-cache/), 3 min 20 s with CI=true (fresh root).
#   make check-man  groff -ww on every man page (part of make check)
#   make check-enable  xalloc-enable on a unit tree, /etc/xalloc.conf,
#                   make install/uninstall (part of make check, a few s)
#
# CI needs the apt packages: build-essential debhelper dpkg-dev lintian rpm
# rpmlint dnf createrepo-c systemd systemd-container debootstrap util-linux
# groff-base shellcheck check pkgconf (and the mirror, for debootstrap).

EXAMPLESDIR ?= $(DATADIR)/doc/xalloc/examples
MAN_PAGES = $(sort $(wildcard man/*.1 man/*.3 man/*.5 man/*.8))
PKG_BUILD := $(BUILD)
PKG_NAME := xalloc
# Extra rpmbuild options, e.g. RPMBUILD_ARGS=--nocheck (as
# DEB_BUILD_OPTIONS=nocheck skips dh_auto_test for make deb).
RPMBUILD_ARGS ?=
SUBST_PATHS = sed -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	-e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g'

INSTALL_TARGETS += install-man install-enable install-examples
UNINSTALL_TARGETS += uninstall-man uninstall-enable uninstall-examples
CHECK_TARGETS += check-man check-enable

.PHONY: install-man install-enable install-examples uninstall-man \
	uninstall-enable uninstall-examples check-man check-enable deb rpm \
	e2e e2e-deb e2e-rpm deb-symbols

## install-man: install every man page (man/*.[1358]) into MANDIR/manN
install-man:
	@set -e; for p in $(MAN_PAGES); do \
	  s=$${p##*.}; \
	  echo "$(INSTALL) -m 0644 $$p $(DESTDIR)$(MANDIR)/man$$s/"; \
	  $(INSTALL) -d $(DESTDIR)$(MANDIR)/man$$s; \
	  $(INSTALL) -m 0644 $$p $(DESTDIR)$(MANDIR)/man$$s/; \
	done

uninstall-man:
	@set -e; for p in $(MAN_PAGES); do \
	  rm -f $(DESTDIR)$(MANDIR)/man$${p##*.}/$${p##*/}; \
	done

## install-enable: install xalloc-enable into SBINDIR
install-enable: tools/xalloc-enable.in
	$(INSTALL) -d $(DESTDIR)$(SBINDIR)
	$(SUBST_PATHS) tools/xalloc-enable.in > $(DESTDIR)$(SBINDIR)/xalloc-enable.tmp
	chmod 0755 $(DESTDIR)$(SBINDIR)/xalloc-enable.tmp
	mv -f $(DESTDIR)$(SBINDIR)/xalloc-enable.tmp $(DESTDIR)$(SBINDIR)/xalloc-enable

uninstall-enable:
	rm -f $(DESTDIR)$(SBINDIR)/xalloc-enable

# The commented /etc/xalloc.conf, generated from the option table.
$(BUILD)/xalloc.conf: systemd/xalloc.conf.sh src/options.def | $(BUILD)
	systemd/xalloc.conf.sh src/options.def > $@.tmp
	mv -f $@.tmp $@

# /etc/xalloc.conf is an operator's file: never overwrite one that exists
# (packages install into an empty DESTDIR and mark it a conffile).
## install-examples: example drop-in to EXAMPLESDIR, commented SYSCONFDIR/xalloc.conf
install-examples: systemd/xalloc-preload.conf.in $(BUILD)/xalloc.conf
	$(INSTALL) -d $(DESTDIR)$(EXAMPLESDIR) $(DESTDIR)$(SYSCONFDIR)
	$(SUBST_PATHS) systemd/xalloc-preload.conf.in > $(DESTDIR)$(EXAMPLESDIR)/xalloc-preload.conf
	chmod 0644 $(DESTDIR)$(EXAMPLESDIR)/xalloc-preload.conf
	$(INSTALL) -m 0644 $(BUILD)/xalloc.conf $(DESTDIR)$(EXAMPLESDIR)/xalloc.conf
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/xalloc.conf ] && \
	    ! cmp -s $(BUILD)/xalloc.conf $(DESTDIR)$(SYSCONFDIR)/xalloc.conf; then \
	  echo "keeping the existing $(DESTDIR)$(SYSCONFDIR)/xalloc.conf"; \
	else \
	  echo "$(INSTALL) -m 0644 $(BUILD)/xalloc.conf $(DESTDIR)$(SYSCONFDIR)/xalloc.conf"; \
	  $(INSTALL) -m 0644 $(BUILD)/xalloc.conf $(DESTDIR)$(SYSCONFDIR)/xalloc.conf; \
	fi

# Removes /etc/xalloc.conf only when nobody changed it.
uninstall-examples: $(BUILD)/xalloc.conf
	rm -f $(DESTDIR)$(EXAMPLESDIR)/xalloc-preload.conf $(DESTDIR)$(EXAMPLESDIR)/xalloc.conf
	-rmdir $(DESTDIR)$(EXAMPLESDIR) 2>/dev/null
	@if cmp -s $(BUILD)/xalloc.conf $(DESTDIR)$(SYSCONFDIR)/xalloc.conf; then \
	  echo "rm -f $(DESTDIR)$(SYSCONFDIR)/xalloc.conf"; rm -f $(DESTDIR)$(SYSCONFDIR)/xalloc.conf; \
	elif [ -e $(DESTDIR)$(SYSCONFDIR)/xalloc.conf ]; then \
	  echo "keeping the modified $(DESTDIR)$(SYSCONFDIR)/xalloc.conf"; \
	fi

## check-man: render every man page with groff -ww -man -z; any output fails
check-man:
	@set -e; test -n "$(MAN_PAGES)" || { echo "check-man: no man pages" >&2; exit 1; }; \
	for p in $(MAN_PAGES); do \
	  out=$$(LC_ALL=C.UTF-8 groff -ww -man -z $$p 2>&1) || { echo "$$out"; echo "check-man: $$p failed" >&2; exit 1; }; \
	  if [ -n "$$out" ]; then echo "$$out"; echo "check-man: $$p: groff warnings" >&2; exit 1; fi; \
	  echo "check-man: $$p ok"; \
	done

## check-enable: offline tests: xalloc-enable, example drop-in, xalloc.conf, install/uninstall
check-enable: lib
	tests/e2e/enable-offline.sh $(LIB)

# $(call pkg_export,DIR): copies the tree (tracked and new files that git
# does not ignore; without git, everything but build/) into DIR, so that
# the package builds run there and leave nothing in the working tree.
pkg_export = rm -rf $(1) && mkdir -p $(1) && \
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	  git ls-files -co --exclude-standard -z; \
	else \
	  find . -path ./$(BUILD) -prune -o -path ./.git -prune -o ! -type d -printf '%P\0'; \
	fi | tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C $(1)

## deb: build libxalloc1, libxalloc-dev, xalloc-tools into build/deb/ and run lintian
## (installs the build dependencies as root, else prints the apt-get command)
deb:
	@tools/deps.sh deb
	@v=$$(dpkg-parsechangelog -l debian/changelog -S Version); \
	  test "$${v%%-*}" = "$(VERSION)" || { echo "deb: debian/changelog says $$v, include/xalloc.h says $(VERSION)" >&2; exit 1; }
	rm -rf $(PKG_BUILD)/deb
	$(call pkg_export,$(PKG_BUILD)/deb/$(PKG_NAME)-$(VERSION))
	cd $(PKG_BUILD)/deb/$(PKG_NAME)-$(VERSION) && dpkg-buildpackage -us -uc -b
	rm -rf $(PKG_BUILD)/deb/$(PKG_NAME)-$(VERSION)
	lintian --fail-on error,warning \
	  $(PKG_BUILD)/deb/*.changes
	@ls -l $(PKG_BUILD)/deb/*.deb

## deb-symbols: print the symbols file that the built library calls for
deb-symbols: lib
	@tmp=$$(mktemp -d); mkdir -p $$tmp/DEBIAN; \
	  dpkg-gensymbols -q -plibxalloc1 -v$(VERSION) -e$(LIB) -P$$tmp -O 2>/dev/null; \
	  rm -rf $$tmp

## rpm: build xalloc, xalloc-devel, xalloc-tools into build/rpm/RPMS and run rpmlint
## (installs the build dependencies as root, else prints the command)
rpm:
	@tools/deps.sh rpm
	@v=$$(sed -n 's/^Version:[[:space:]]*//p' rpm/xalloc.spec); \
	  test "$$v" = "$(VERSION)" || { echo "rpm: rpm/xalloc.spec says $$v, include/xalloc.h says $(VERSION)" >&2; exit 1; }
	rm -rf $(PKG_BUILD)/rpm
	$(call pkg_export,$(PKG_BUILD)/rpm/src/$(PKG_NAME)-$(VERSION))
	mkdir -p $(PKG_BUILD)/rpm/SOURCES
	tar -C $(PKG_BUILD)/rpm/src -czf $(PKG_BUILD)/rpm/SOURCES/$(PKG_NAME)-$(VERSION).tar.gz \
	  $(PKG_NAME)-$(VERSION)
	rm -rf $(PKG_BUILD)/rpm/src
	rpmbuild --define "_topdir $(abspath $(PKG_BUILD)/rpm)" --nodeps $(RPMBUILD_ARGS) -bb rpm/xalloc.spec
	rpmlint -c rpm/rpmlint.toml -r rpm/xalloc.rpmlintrc rpm/xalloc.spec $(PKG_BUILD)/rpm/RPMS/*/*.rpm
	@ls -l $(PKG_BUILD)/rpm/RPMS/*/*.rpm

## e2e: build the .deb and .rpm, boot systemd in a container, enable xalloc for redis
e2e: deb rpm
	tests/e2e/run.sh

# The two halves of e2e, on packages already built.
e2e-deb:
	tests/e2e/run.sh deb

e2e-rpm:
	tests/e2e/run.sh rpm
