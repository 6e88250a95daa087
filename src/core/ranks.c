/* SPDX-License-Identifier: MIT */
/* Lists of ranks in messages, runs written as ranges so a large job's lists stay short. */
#include <stdio.h>
#include <string.h>

#include "core/ranks.h"

static void append(char *out, size_t len, const char *text)
{
    size_t used = strlen(out);
    if (used + strlen(text) + 4 >= len) {
        if (used + 4 < len && strcmp(out + (used >= 3 ? used - 3 : 0), "...") != 0)
            strcat(out, "...");
        return;
    }
    strcat(out, text);
}

int tt_ranks_str(const unsigned char *set, int n, char *out, size_t len)
{
    int count = 0;
    char list[len > 0 ? len : 1];
    list[0] = '\0';
    for (int r = 0; r < n; r++) {
        if (!set[r])
            continue;
        int end = r;
        while (end + 1 < n && set[end + 1])
            end++;
        char item[32];
        if (end - r >= 2)
            snprintf(item, sizeof item, "%s%d-%d", count ? ", " : "", r, end);
        else if (end > r)
            snprintf(item, sizeof item, "%s%d, %d", count ? ", " : "", r, end);
        else
            snprintf(item, sizeof item, "%s%d", count ? ", " : "", r);
        append(list, len, item);
        count += end - r + 1;
        r = end;
    }
    if (len > 0)
        snprintf(out, len, "%s %s", count == 1 ? "rank" : "ranks", list);
    return count;
}
