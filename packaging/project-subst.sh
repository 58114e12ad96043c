#!/bin/sh
# SPDX-License-Identifier: MIT
# packaging/project-subst.sh FILE... - replaces @RAYO_HOMEPAGE@,
# @RAYO_MAINTAINER@ and @RAYO_RELEASES@ in each FILE (in place) with the
# values of packaging/project.env, and fails if any @RAYO_...@ is left.
set -eu
. "$(dirname "$0")/project.env"
for f in "$@"; do
    # '|' separates sed's fields: the values are URLs and mail addresses.
    sed -i -e "s|@RAYO_HOMEPAGE@|$RAYO_HOMEPAGE|g" -e "s|@RAYO_MAINTAINER@|$RAYO_MAINTAINER|g" \
        -e "s|@RAYO_RELEASES@|$RAYO_RELEASES|g" "$f"
    if grep -n '@RAYO_[A-Z_]*@' "$f"; then
        echo "project-subst: $f: a placeholder with no value in project.env" >&2
        exit 1
    fi
done
