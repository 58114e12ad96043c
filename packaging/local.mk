# SPDX-License-Identifier: MIT
# packaging/: Debian packaging (packaging/debian, copied to debian/ by
# build-debs.sh), the RPM spec, and the ABI guard with its baselines.
EXTRA_DIST += LICENSE packaging/project.env packaging/project-subst.sh \
	packaging/build-debs.sh packaging/build-rpms.sh packaging/abi-check.sh tests/install-test.sh \
	packaging/abi/librayo.abi packaging/abi/rayo-plugin.abi packaging/abi/opaque.suppr packaging/rpm/rayo.spec \
	packaging/debian/control packaging/debian/rules packaging/debian/changelog \
	packaging/debian/copyright packaging/debian/source/format \
	packaging/debian/librayo0.symbols packaging/debian/lintian-overrides.txt \
	packaging/debian/librayo0.install packaging/debian/librayo-dev.install \
	packaging/debian/rayo-tools.install packaging/debian/rayo-common.install \
	packaging/debian/rayo-common.dirs packaging/debian/watch packaging/debian/tests/control \
	packaging/debian/tests/conform packaging/debian/tests/build-against \
	packaging/debian/rayo-backend-scalar.install packaging/debian/rayo-backend-avx2.install \
	packaging/debian/rayo-backend-avx512.install \
	packaging/debian/rayo-backend-neon.install packaging/debian/rayo-backend-vulkan.install \
	packaging/debian/rayo-backend-cuda.install

# librayo and the plugin ABI against the committed baselines (abidiff).
dist_noinst_SCRIPTS += tests/test-abi.sh
TESTS += tests/test-abi.sh

# After a deliberate ABI change: new baselines and Debian symbols file.
abi-baseline: all examples/plugin-template/rayo-template.la
	$(SHELL) $(srcdir)/packaging/abi-check.sh $(abs_top_builddir) --update
.PHONY: abi-baseline
