#!/bin/sh
# version.sh: the version of this checkout as a valid Debian and RPM version, from git describe.
#   tag v1.2.3, at the tag            1.2.3
#   tag v1.2.3, 4 commits after it    1.2.3+git4.abc1234     (sorts after 1.2.3, before 1.2.4)
#   no tag yet, 120 commits           0.0.0~git120.abc1234   (sorts before any 0.0.0 release)
#   uncommitted changes               .dirty appended
# A newer commit sorts after an older one of the same branch (the commit count grows).
set -eu
cd "$(dirname "$0")/../.."
if ! git rev-parse --git-dir >/dev/null 2>&1; then
	echo 0.0.0~unknown
	exit 0
fi
hash=$(git rev-parse --short=7 HEAD)
dirty=
git diff --quiet HEAD -- 2>/dev/null || dirty=.dirty
if d=$(git describe --tags --long --match 'v[0-9]*' 2>/dev/null); then
	# v1.2.3-4-gabc1234
	base=${d%-*}
	count=${base##*-}
	tag=${base%-*}
	tag=${tag#v}
	tag=$(printf '%s' "$tag" | tr '-' '~') # v1.2.3-rc1 -> 1.2.3~rc1 (a pre-release sorts first)
	if [ "$count" = 0 ]; then
		echo "$tag$dirty"
	else
		echo "$tag+git$count.$hash$dirty"
	fi
else
	echo "0.0.0~git$(git rev-list --count HEAD).$hash$dirty"
fi
