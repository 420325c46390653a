// SPDX-License-Identifier: MIT
/* xpusup-KIND for the sink kinds: the sink loop (sink.c) around the format of SINK_KIND. */
#include "actors/sink/sink.h"

#define FMT_OF(kind) FMT_OF_(kind)
#define FMT_OF_(kind) fmt_##kind

int main(int argc, char **argv)
{
	return sink__main(argc, argv, &FMT_OF(SINK_KIND));
}
