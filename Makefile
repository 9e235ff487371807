# FaceGate: `make run` starts the whole stack locally, `make test` runs every test against real servers.
.PHONY: run test install build release bench stack-down clean

install:
	@scripts/stack.sh install

build:
	swift build

release:
	swift build -c release

run: install
	@scripts/run.sh

test: install
	@scripts/test.sh

bench: install
	@scripts/bench.sh

stack-down:
	@scripts/stack.sh down run; scripts/stack.sh down test

clean: stack-down
	rm -rf .build .run
