/* SPDX-License-Identifier: MIT */
/*
 * Forced into every file of libnccl.so.2 after config.h: its copy of the
 * core goes without the optional libraries a drop-in library must not
 * need (topology from /sys instead of hwloc; no PMIx launch).
 */
#undef TT_HAVE_HWLOC
#undef TT_HAVE_PMIX
