# mk/demo.mk: the newcomer's targets: deps (build packages) and demo.

.PHONY: deps deps-check demo
## deps: install the packages needed to build and test (as root), or print the command
deps:
	tools/deps.sh check

## demo: build the library and run real programs under it, time and RSS against glibc
demo:
	@tools/deps.sh build
	@command -v python3 >/dev/null && command -v sqlite3 >/dev/null || tools/deps.sh check
	$(MAKE) --no-print-directory lib
	tools/demo.py $(LIB)
