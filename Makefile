# lite-agent — the two commands of the README are `make demo` and `make test`.
GO        ?= go
BIN       := bin/lite-agent
# The sandbox's entry point: `lite-agent sandbox run` as a program of its
# own, which lite-agent hands the command to when it is installed beside
# it (cmd/lite-agent/entry_linux.c).
SANDBOX_BIN := bin/lite-agent-sandbox
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

# install puts lite-agent on the PATH: in /usr/local/bin as root, else in
# ~/.local/bin (on the PATH of a Debian or Ubuntu login once it exists).
# PREFIX=DIR installs in DIR/bin.
PREFIX    ?= $(if $(filter 0,$(shell id -u)),/usr/local,$(HOME)/.local)

.PHONY: all build install demo test deps demo-deps bench-deps lint fmt-check bench clean

all: build

# deps installs missing system packages when run as root, and prints the
# exact command otherwise.
deps:
	@scripts/deps.sh

# demo-deps installs only what the demo needs (the sandbox's cgo library,
# gcc, python3 for the demo's test, git).
demo-deps:
	@scripts/deps.sh --demo

bench-deps:
	@scripts/deps.sh --bench

# VERSION names the build: by default "dev+" and a hash of the sources
# (tracked and untracked files, not ignored ones), which is also how
# lite-agent-sandbox knows that the lite-agent handing it a command is
# from the same build (internal/sandboxrun's Paired).
SOURCES_HASH = $(shell { git ls-files -co --exclude-standard 2>/dev/null || find . -type f -not -path './bin/*' -not -path './.git/*'; } | LC_ALL=C sort | xargs -d '\n' cat 2>/dev/null | sha256sum | cut -c1-12)
VERSION ?= dev+$(SOURCES_HASH)
LDFLAGS   = -X main.version=$(VERSION)

build:
	$(GO) build -o $(BIN) -ldflags "$(LDFLAGS)" ./cmd/lite-agent
	$(GO) build -o $(SANDBOX_BIN) -ldflags "$(LDFLAGS)" ./cmd/lite-agent-sandbox

# install needs only what the build needs (the demo's packages: the
# sandbox's cgo library and gcc). Both programs go to one directory:
# lite-agent hands `sandbox run` to the lite-agent-sandbox beside it.
install: demo-deps build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(SANDBOX_BIN) $(DESTDIR)$(PREFIX)/bin/lite-agent-sandbox
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/lite-agent
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "note: $(PREFIX)/bin is not on your PATH; add it (export PATH=\"$(PREFIX)/bin:\$$PATH\")";; esac

demo: demo-deps build
	@scripts/demo.sh

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

lint: fmt-check
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# The end-to-end suite (test/) runs after the packages, on its own: it drives
# many confined processes at once and is the heaviest part of the run.
test: deps lint
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v '/test$$')
	$(GO) test -count=1 -timeout 30m ./test/

bench: build bench-deps
	@bench/run.sh

clean:
	rm -rf bin
