// SPDX-License-Identifier: MIT
/*
 * CUDA graph node creation stacks. LAUNCH records of graph node creation (correlation id
 * XPU_LAUNCH_GRAPH_NODE | node id) are no join keys: per (pid, node id) their stack is kept,
 * and a graph kernel (XPU_KERNEL_F_GRAPH), copy or memset (XPU_COPY_F_GRAPH) joined to its
 * graph launch takes the stack of its node's creation (exact); without one it keeps the
 * graph launch's stack, corr_type APPROXIMATE, confidence 0.5. Tables, allocated in
 * graph__init:
 *
 *   nodes[]     the node stacks, a ring in creation order: head is the next to fill, the
 *               oldest node held (or a hole left by an exited process), so when the ring is
 *               full the oldest goes (the newest max nodes are kept)
 *   idx         open-addressed (linear probing, deletion through common/oatab.h) on
 *               (pid, node id) -> nodes index
 *   pids        pid set: processes that may have node stacks, so an exit scans only for them
 *
 * A process's node stacks go once its exit grace has passed (graph__drop_pid).
 */
#include "actors/correlator/join_engines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"

/* A CUDA graph node's creation stack (a LAUNCH with XPU_LAUNCH_GRAPH_NODE). */
struct gnode {
	__u64 node; /* the node id, without XPU_LAUNCH_GRAPH_NODE */
	__u64 *stack; /* n_stack user frames, owned */
	__u32 pid; /* 0: free */
	__u16 n_stack;
	__u16 reserved;
};

static uint32_t gnode_slot_home(const void *tab, uint32_t slot)
{
	const struct graph *g = container_of(tab, const struct graph, idx);
	const struct gnode *n = &g->nodes[idx_slots__at(&g->idx, slot)];

	return (__u32)pid_id_hash(n->pid, n->node);
}

static const struct oatab_ops gnode_ops = {
	.empty = idx_slots__empty,
	.home = gnode_slot_home,
	.move = idx_slots__move,
	.clear = idx_slots__clear,
};

static __u32 gnode_find(const struct graph *g, __u32 pid, __u64 node, __u32 *slot)
{
	__u32 i = (__u32)pid_id_hash(pid, node) & g->idx.mask, e;

	for (;; i = (i + 1) & g->idx.mask) {
		e = idx_slots__at(&g->idx, i);
		if (e == NIL || (g->nodes[e].node == node && g->nodes[e].pid == pid)) {
			*slot = i;
			return e;
		}
	}
}

/* Node e's stack goes and its entry is free (its index slot is the caller's to delete). */
static void gnode_forget(struct graph *g, __u32 e)
{
	free(g->nodes[e].stack);
	g->nodes[e].stack = NULL;
	g->nodes[e].pid = 0;
	g->env->st.graph_nodes--;
}

/*
 * Keep the creation stack of graph node `node` of pid (a node created again replaces its
 * stack). The entries are a ring in creation order: the next one to fill is the oldest node
 * held (or a hole left by an exited process), so when the table is full the oldest goes. A
 * node without a stack is not kept: its kernels are better off with the graph launch's.
 */
void graph__put(struct graph *g, __u32 pid, __u64 node, const __u64 *ips, __u32 n)
{
	__u32 slot, e;
	struct gnode *gn;
	__u64 *stack;

	if (!n || !(stack = malloc(8u * n)))
		return;
	memcpy(stack, ips, 8u * n);
	e = gnode_find(g, pid, node, &slot);
	if (e != NIL) {
		gn = &g->nodes[e];
		free(gn->stack);
		gn->stack = stack;
		gn->n_stack = (__u16)n;
		return;
	}
	e = g->head;
	gn = &g->nodes[e];
	if (gn->pid) {
		__u32 old;

		gnode_find(g, gn->pid, gn->node, &old);
		gnode_forget(g, e);
		oatab__delete(&g->idx, g->idx.mask, old, &gnode_ops);
		g->env->st.graph_nodes_evicted++;
		gnode_find(g, pid, node, &slot); /* the table changed */
	}
	*gn = (struct gnode){ .node = node, .stack = stack, .pid = pid, .n_stack = (__u16)n };
	g->idx.slot[slot] = e + 1;
	g->head = (e + 1) % g->max;
	pidset__add(g->pids, pid);
	g->env->st.graph_nodes++;
}

static bool gnode_of_pid(void *tab, uint32_t slot, void *ctx)
{
	struct graph *g = container_of(tab, struct graph, idx);
	__u32 e = idx_slots__at(&g->idx, slot);

	if (g->nodes[e].pid != *(const __u32 *)ctx)
		return false;
	gnode_forget(g, e);
	return true;
}

/* Drop every node of pid: a scan of the table, only for a process that may have any. */
void graph__drop_pid(void *graph, __u32 pid)
{
	struct graph *g = graph;

	if (!pidset__may_have(g->pids, pid) || !g->env->st.graph_nodes)
		return;
	oatab__delete_if(&g->idx, g->idx.mask, &gnode_ops, gnode_of_pid, &pid);
}

/*
 * A graph kernel, copy or memset joined to its graph launch: the stack that matters is the
 * one that created its node. Known: that stack, an exact join (the launched_by links stay
 * the graph launch's). Not known (created before we started, its LAUNCH lost, or not here
 * yet: node LAUNCHes come through another ring, and GPU work goes out with what is known
 * when it goes out): the graph launch's stack, marked approximate.
 */
void graph__attribute(struct graph *g, struct xpu_cevent *ev)
{
	__u64 node = ev->graph_node_id & ~XPU_LAUNCH_GRAPH_NODE;
	__u32 slot, e = node ? gnode_find(g, ev->pid, node, &slot) : NIL;

	if (e == NIL) {
		ev->corr_type = XPU_CORR_APPROXIMATE;
		ev->confidence = 0.5f;
		g->env->st.graph_approximate++;
		return;
	}
	if (g->env->enrich & CONF_ENRICH_STACKS) {
		ev->n_user = g->nodes[e].n_stack;
		ev->stack = g->nodes[e].stack;
	}
	g->env->st.graph_node_stacks++;
}

int graph__init(struct graph *g, struct join_env *env, __u32 max)
{
	g->env = env;
	g->max = max;
	g->idx.mask = pow2_at_least(2ull * max) - 1;
	g->nodes = calloc(max, sizeof(*g->nodes));
	g->idx.slot = calloc((size_t)g->idx.mask + 1, sizeof(*g->idx.slot));
	g->pids = calloc(PIDSET_WORDS, sizeof(*g->pids));
	return g->nodes && g->idx.slot && g->pids ? 0 : -ENOMEM;
}

void graph__fini(struct graph *g)
{
	__u32 i;

	if (g->nodes)
		for (i = 0; i < g->max; i++)
			free(g->nodes[i].stack);
	free(g->nodes);
	free(g->idx.slot);
	free(g->pids);
}
