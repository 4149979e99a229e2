#!/bin/sh
# Refresh the vendored Swagger UI from the version pinned in package-lock.json:
#   sh tools/api-reference/vendor.sh
# The server serves these files itself (/docs): no network at run time, no Node needed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
target="$here/../../src/dutyline/api/static/reference"
npm ci --prefix "$here" --no-audit --no-fund
dist="$here/node_modules/swagger-ui-dist"
rm -rf "$target"
mkdir -p "$target"
for f in swagger-ui-bundle.js swagger-ui-bundle.js.LICENSE.txt swagger-ui.css LICENSE NOTICE; do
  cp "$dist/$f" "$target/$f"
done
# The bundle's last line points at a source map that is not shipped.
sed -i -e "/^\/\/# sourceMappingURL=/d" -e "/^\/\*# sourceMappingURL=/d" "$target/swagger-ui-bundle.js" "$target/swagger-ui.css"
node -e 'console.log(require(process.argv[1]).version)' "$dist/package.json" > "$target/VERSION"
