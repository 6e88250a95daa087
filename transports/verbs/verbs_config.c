/* SPDX-License-Identifier: MIT */
/* verbs' variables (TT_VERBS_CONFIG in verbs.h): the table every verbs file
 * reads them from, and tutti-info lists. */
#include "core/env_config.h"
#include "transports/verbs/verbs.h"

TT_CONFIG_TABLE_DEFINE(tt_verbs_config, "verbs", TT_VERBS_CONFIG, TT_VERBS_CONFIG_RULES);
