/* SPDX-License-Identifier: MIT */
/*
 * tutti-explain's schedule for machines and documents. The JSON (schema 2)
 * holds the algorithm, its summary, the fold, the prediction and the
 * textbook formula, the shape it is drawn in (tools/explain_shape.h: its
 * kind, each rank's host, a tree's parents, depths and places), and every
 * global step: each rank's work, the messages (who, to whom, what they
 * carry: "chunk 2 [a2+b2]", and for a tree which tree) and the grid of what
 * every rank's output holds after it.
 */
#ifndef TT_EXPLAIN_JSON_H
#define TT_EXPLAIN_JSON_H
#include <stdio.h>

#include "tools/explain_view.h"

/* One JSON object, no newline. 0, or -1 with a message on stderr. */
int tt_explain_json(FILE *f, const tt_view_t *v);
/* A Mermaid sequence diagram: a note per global step in which messages
 * move, an arrow per message labelled with what it carries. */
void tt_explain_mermaid(FILE *f, const tt_view_t *v);
#endif
