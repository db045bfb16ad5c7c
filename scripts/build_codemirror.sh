#!/bin/sh
# Rebuild the room's code editor: CodeMirror 6 with Python, bundled by esbuild into one
# ES module, lockshop/room/static/vendor/codemirror/codemirror.js, with the licence of
# every package in it and a README that says what made it.
#
# The page imports that one file (no CDN: a student's browser reaches only `up`).
# Run it after changing scripts/build_codemirror.js or the versions below. It builds in
# a temporary folder, so no node_modules ever lands in the repository. Needs node and npm.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out="$here/../lockshop/room/static/vendor/codemirror"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Exact versions: the vendored file is what these make.
packages="codemirror@6.0.2 @codemirror/lang-python@6.2.1 @codemirror/commands@6.11.1
          @codemirror/view@6.43.15 @codemirror/state@6.7.6 @codemirror/language@6.13.1"
bundler="esbuild@0.28.2"

cp "$here/build_codemirror.js" "$work/entry.js"
cd "$work"
npm init -y >/dev/null
npm install --no-audit --no-fund --save-exact $packages >/dev/null
npm install --no-audit --no-fund --save-exact --save-dev "$bundler" >/dev/null
mkdir -p "$out"
npx esbuild entry.js --bundle --format=esm --minify --legal-comments=none \
    --target=es2020 --outfile="$out/codemirror.js" --metafile=meta.json

# Every package esbuild put in the bundle, and its licence (all MIT, most by Marijn
# Haverbeke, who wrote CodeMirror).
node -e '
  const meta = require("./meta.json");
  const names = new Set();
  for (const input of Object.keys(meta.inputs)) {
    const m = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
    if (m) names.add(m[1]);
  }
  console.log([...names].sort().join("\n"));
' > bundled.txt
: > "$out/LICENSE"
while read -r name; do
  version=$(node -p "require('./node_modules/$name/package.json').version")
  licence=$(node -p "require('./node_modules/$name/package.json').license")
  {
    echo "=== $name $version ($licence)"
    echo
    cat "node_modules/$name/LICENSE"* 2>/dev/null || echo "(no licence file in the package; package.json says $licence)"
    echo
  } >> "$out/LICENSE"
done < bundled.txt

{
  echo "# CodeMirror 6, bundled for the room"
  echo
  echo "The room's code editor (\`static/room.js\`) is [CodeMirror 6](https://codemirror.net/)"
  echo "by Marijn Haverbeke and others, MIT licence (every bundled package's licence is in"
  echo "\`LICENSE\` here). It is kept in the project, not loaded from a CDN: a student's"
  echo "browser reaches only the instructor's machine."
  echo
  echo "\`codemirror.js\` is one ES module made by \`scripts/build_codemirror.sh\` (esbuild,"
  echo "minified) from \`scripts/build_codemirror.js\` and these npm packages:"
  echo
  echo "| package | version |"
  echo "|---|---|"
  while read -r name; do
    echo "| \`$name\` | $(node -p "require('./node_modules/$name/package.json').version") |"
  done < bundled.txt
  echo
  echo "bundled with \`$bundler\`; \`codemirror.js\` sha256"
  echo "\`$(sha256sum "$out/codemirror.js" | cut -d' ' -f1)\`."
  echo
  echo "To update: change the versions in \`scripts/build_codemirror.sh\` and run it."
} > "$out/README.md"
rm -f "$out/VERSIONS"
echo "wrote $out/codemirror.js ($(wc -c < "$out/codemirror.js") bytes)"
