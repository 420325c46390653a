// SPDX-License-Identifier: MIT
/*
 * train_loop: a small CPU-only "training loop" to profile with xpusup, the shape of a real
 * one so that its flame graph reads like one: a 3-layer perceptron learns to classify
 * synthetic 16x16 "images" of 10 classes with Adam, epoch after epoch.
 *
 *	train_loop [--seconds S | --epochs N] [--seed N]
 *
 * Runs whole epochs until S seconds have passed (default 5), or exactly N epochs, and prints
 * one line per epoch (loss, accuracy on held-out data) on stdout. What the time goes into,
 * roughly:
 *
 *	train_step
 *	  load_batch	  shuffle_indices, gather_rows, augment (random shift and noise), normalize
 *	  forward	  linear -> matmul (and bias), relu, softmax_cross_entropy
 *	  backward	  softmax_backward, linear_backward -> matmul_at_b (weights),
 *			  matmul_a_bt (inputs), relu_backward
 *	  optimizer_step  adam_update per tensor
 *	evaluate	  forward again, on the held-out set, once per epoch
 *
 * Every function is our own (no BLAS, no libm in the hot paths) and the program is built
 * with frame pointers and -rdynamic, so a frame-pointer sampler sees whole stacks. Exits 0,
 * 100 on a usage error, 111 on a system failure.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIDE 16
#define N_IN (SIDE * SIDE)
#define N_H1 256
#define N_H2 128
#define N_OUT 10
#define BATCH 64
#define N_TRAIN 4096
#define N_TEST 1024

/* Not static, and visible (-fvisibility=default in meson.build): exported by -rdynamic, so
 * the names a profile shows are these */
struct dataset;
struct layer;
struct model;
void shuffle_indices(uint32_t *idx, uint32_t n, uint64_t *rng);
void gather_rows(const struct dataset *d, const uint32_t *idx, uint32_t n, uint8_t *raw,
		 uint8_t *labels);
void random_rotate(const uint8_t *src, uint8_t *dst, float angle, float dx, float dy);
void add_noise(uint8_t *img, uint64_t *rng);
void augment(uint8_t *raw, uint32_t n, uint64_t *rng);
void normalize(const uint8_t *raw, uint32_t n, float *x);
void load_batch(const struct dataset *d, const uint32_t *order, uint32_t first, float *x,
		uint8_t *labels, uint64_t *rng);
void matmul(const float *a, const float *b, float *c, int m, int k, int n);
void matmul_at_b(const float *a, const float *b, float *c, int m, int k, int n);
void matmul_a_bt(const float *a, const float *b, float *c, int m, int k, int n);
void linear(const struct layer *l, const float *x, float *y);
void linear_backward(struct layer *l, const float *x, const float *dy, float *dx);
void relu(float *x, int n);
void relu_backward(const float *y, float *dy, int n);
float softmax_cross_entropy(const float *logits, const uint8_t *labels, float *probs, int *correct);
void softmax_backward(const float *probs, const uint8_t *labels, float *dlogits);
float forward(struct model *m, const float *x, const uint8_t *labels, int *correct);
void backward(struct model *m, const float *x, const uint8_t *labels);
void adam_update(float *w, const float *g, float *m1, float *m2, int n, int t);
void optimizer_step(struct model *m);
float train_step(struct model *m, const struct dataset *d, const uint32_t *order, uint32_t first,
		 uint64_t *rng);
float evaluate(struct model *m, const struct dataset *d, float *accuracy);

struct dataset {
	uint32_t n;
	uint8_t *pixels; /* n x N_IN */
	uint8_t *labels; /* n */
};

/* A fully connected layer y = x W + b with its gradients and Adam moments */
struct layer {
	int n_in, n_out;
	float *w, *b; /* n_in x n_out, n_out */
	float *dw, *db; /* gradients */
	float *mw, *vw; /* Adam moments of w */
	float *mb, *vb; /* ... and of b */
};

struct model {
	struct layer l1, l2, l3;
	/* Activations of one batch, kept for the backward pass */
	float h1[BATCH * N_H1], h2[BATCH * N_H2], logits[BATCH * N_OUT], probs[BATCH * N_OUT];
	float dh1[BATCH * N_H1], dh2[BATCH * N_H2], dlogits[BATCH * N_OUT];
	int step;
};

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

static uint8_t clamp_u8(int v)
{
	if (v < 0)
		return 0;
	return v > 255 ? 255 : (uint8_t)v;
}

static float uniform(uint64_t *s)
{
	return (float)(xorshift(s) >> 40) / (float)(1 << 24);
}

/* Fisher-Yates, once per epoch */
void shuffle_indices(uint32_t *idx, uint32_t n, uint64_t *rng)
{
	uint32_t i, j, t;

	for (i = n - 1; i > 0; i--) {
		j = (uint32_t)(xorshift(rng) % (i + 1));
		t = idx[i];
		idx[i] = idx[j];
		idx[j] = t;
	}
}

/* The data loader's copy: one row per sampled index (a byte loop of our own rather than
 * memcpy, so that samples in it keep their caller under a frame-pointer unwinder) */
void gather_rows(const struct dataset *d, const uint32_t *idx, uint32_t n, uint8_t *raw,
		 uint8_t *labels)
{
	uint32_t i, p;

	for (i = 0; i < n; i++) {
		const uint8_t *src = d->pixels + (size_t)idx[i] * N_IN;

		for (p = 0; p < N_IN; p++)
			raw[(size_t)i * N_IN + p] = src[p];
		labels[i] = d->labels[idx[i]];
	}
}

/* Rotates src by angle (radians) about its centre and shifts it by (dx, dy) pixels into dst,
 * sampling bilinearly; what falls outside is black */
void random_rotate(const uint8_t *src, uint8_t *dst, float angle, float dx, float dy)
{
	const float half = (SIDE - 1) / 2.0f;
	float c = cosf(angle), s = sinf(angle), x, y, fx, fy, v, w;
	int r, col, x0, y0, i, j, sx, sy;

	for (r = 0; r < SIDE; r++) {
		for (col = 0; col < SIDE; col++) {
			/* where dst (r, col) comes from: the inverse rotation */
			x = c * ((float)col - half - dx) + s * ((float)r - half - dy) + half;
			y = -s * ((float)col - half - dx) + c * ((float)r - half - dy) + half;
			x0 = (int)floorf(x);
			y0 = (int)floorf(y);
			fx = x - (float)x0;
			fy = y - (float)y0;
			v = 0;
			for (i = 0; i < 2; i++) {
				for (j = 0; j < 2; j++) {
					sy = y0 + i;
					sx = x0 + j;
					w = (i ? fy : 1 - fy) * (j ? fx : 1 - fx);
					if (sy >= 0 && sy < SIDE && sx >= 0 && sx < SIDE)
						v += w * (float)src[sy * SIDE + sx];
				}
			}
			dst[r * SIDE + col] = (uint8_t)(v + 0.5f);
		}
	}
}

/* Noise on every pixel: a sum of 4 uniforms, about +-48 */
void add_noise(uint8_t *img, uint64_t *rng)
{
	float noise;
	int p;

	for (p = 0; p < N_IN; p++) {
		noise = (uniform(rng) + uniform(rng) + uniform(rng) + uniform(rng) - 2.0f) * 24.0f;
		img[p] = clamp_u8(img[p] + (int)noise);
	}
}

/* Per image: a random rotation of up to 15 degrees and shift of up to 1.5 pixels, then noise */
void augment(uint8_t *raw, uint32_t n, uint64_t *rng)
{
	uint8_t img[N_IN];
	uint32_t i;
	int p;

	for (i = 0; i < n; i++) {
		uint8_t *pixels = raw + (size_t)i * N_IN;

		for (p = 0; p < N_IN; p++)
			img[p] = pixels[p];
		random_rotate(img, pixels, (uniform(rng) - 0.5f) * 0.52f,
			      (uniform(rng) - 0.5f) * 3.0f, (uniform(rng) - 0.5f) * 3.0f);
		add_noise(pixels, rng);
	}
}

void normalize(const uint8_t *raw, uint32_t n, float *x)
{
	uint32_t i;

	for (i = 0; i < n * N_IN; i++)
		x[i] = ((float)raw[i] / 255.0f - 0.5f) * 4.0f;
}

void load_batch(const struct dataset *d, const uint32_t *order, uint32_t first, float *x,
		uint8_t *labels, uint64_t *rng)
{
	static uint8_t raw[BATCH * N_IN];

	gather_rows(d, order + first, BATCH, raw, labels);
	augment(raw, BATCH, rng);
	normalize(raw, BATCH, x);
}

/* c (m x n) = a (m x k) b (k x n), all row-major; i-k-j order for unit-stride inner loops */
void matmul(const float *a, const float *b, float *c, int m, int k, int n)
{
	int i, p, j;

	memset(c, 0, sizeof(*c) * (size_t)m * (size_t)n);
	for (i = 0; i < m; i++)
		for (p = 0; p < k; p++) {
			float aip = a[i * k + p];

			for (j = 0; j < n; j++)
				c[i * n + j] += aip * b[p * n + j];
		}
}

/* c (k x n) = a^T b, a (m x k), b (m x n): the weight gradient x^T dy */
void matmul_at_b(const float *a, const float *b, float *c, int m, int k, int n)
{
	int i, p, j;

	memset(c, 0, sizeof(*c) * (size_t)k * (size_t)n);
	for (i = 0; i < m; i++)
		for (p = 0; p < k; p++) {
			float aip = a[i * k + p];

			for (j = 0; j < n; j++)
				c[p * n + j] += aip * b[i * n + j];
		}
}

/* c (m x k) = a b^T, a (m x n), b (k x n): the input gradient dy W^T */
void matmul_a_bt(const float *a, const float *b, float *c, int m, int k, int n)
{
	int i, p, j;

	for (i = 0; i < m; i++)
		for (p = 0; p < k; p++) {
			float s = 0;

			for (j = 0; j < n; j++)
				s += a[i * n + j] * b[p * n + j];
			c[i * k + p] = s;
		}
}

void linear(const struct layer *l, const float *x, float *y)
{
	int i, j;

	matmul(x, l->w, y, BATCH, l->n_in, l->n_out);
	for (i = 0; i < BATCH; i++)
		for (j = 0; j < l->n_out; j++)
			y[i * l->n_out + j] += l->b[j];
}

/* dx may be NULL (the first layer: nobody needs the input's gradient) */
void linear_backward(struct layer *l, const float *x, const float *dy, float *dx)
{
	int i, j;

	matmul_at_b(x, dy, l->dw, BATCH, l->n_in, l->n_out);
	memset(l->db, 0, sizeof(float) * (size_t)l->n_out);
	for (i = 0; i < BATCH; i++)
		for (j = 0; j < l->n_out; j++)
			l->db[j] += dy[i * l->n_out + j];
	if (dx)
		matmul_a_bt(dy, l->w, dx, BATCH, l->n_in, l->n_out);
}

void relu(float *x, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (x[i] < 0)
			x[i] = 0;
}

void relu_backward(const float *y, float *dy, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (y[i] <= 0)
			dy[i] = 0;
}

/* Mean loss over the batch; probs for the backward pass; *correct counts right answers */
float softmax_cross_entropy(const float *logits, const uint8_t *labels, float *probs, int *correct)
{
	float loss = 0, max, sum;
	int i, j, best;

	for (i = 0; i < BATCH; i++) {
		const float *z = logits + i * N_OUT;
		float *p = probs + i * N_OUT;

		max = z[0];
		best = 0;
		for (j = 1; j < N_OUT; j++)
			if (z[j] > max) {
				max = z[j];
				best = j;
			}
		sum = 0;
		for (j = 0; j < N_OUT; j++) {
			p[j] = expf(z[j] - max);
			sum += p[j];
		}
		for (j = 0; j < N_OUT; j++)
			p[j] /= sum;
		loss -= logf(p[labels[i]] + 1e-12f);
		*correct += best == labels[i];
	}
	return loss / BATCH;
}

void softmax_backward(const float *probs, const uint8_t *labels, float *dlogits)
{
	int i, j;

	for (i = 0; i < BATCH; i++)
		for (j = 0; j < N_OUT; j++)
			dlogits[i * N_OUT + j] =
				(probs[i * N_OUT + j] - (j == labels[i] ? 1.0f : 0.0f)) / BATCH;
}

float forward(struct model *m, const float *x, const uint8_t *labels, int *correct)
{
	linear(&m->l1, x, m->h1);
	relu(m->h1, BATCH * N_H1);
	linear(&m->l2, m->h1, m->h2);
	relu(m->h2, BATCH * N_H2);
	linear(&m->l3, m->h2, m->logits);
	return softmax_cross_entropy(m->logits, labels, m->probs, correct);
}

void backward(struct model *m, const float *x, const uint8_t *labels)
{
	softmax_backward(m->probs, labels, m->dlogits);
	linear_backward(&m->l3, m->h2, m->dlogits, m->dh2);
	relu_backward(m->h2, m->dh2, BATCH * N_H2);
	linear_backward(&m->l2, m->h1, m->dh2, m->dh1);
	relu_backward(m->h1, m->dh1, BATCH * N_H1);
	linear_backward(&m->l1, x, m->dh1, NULL);
}

void adam_update(float *w, const float *g, float *m1, float *m2, int n, int t)
{
	const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
	float c1 = 1.0f - powf(beta1, (float)t), c2 = 1.0f - powf(beta2, (float)t);
	int i;

	for (i = 0; i < n; i++) {
		m1[i] = beta1 * m1[i] + (1 - beta1) * g[i];
		m2[i] = beta2 * m2[i] + (1 - beta2) * g[i] * g[i];
		w[i] -= lr * (m1[i] / c1) / (sqrtf(m2[i] / c2) + eps);
	}
}

static void layer_step(struct layer *l, int t)
{
	adam_update(l->w, l->dw, l->mw, l->vw, l->n_in * l->n_out, t);
	adam_update(l->b, l->db, l->mb, l->vb, l->n_out, t);
}

void optimizer_step(struct model *m)
{
	m->step++;
	layer_step(&m->l1, m->step);
	layer_step(&m->l2, m->step);
	layer_step(&m->l3, m->step);
}

float train_step(struct model *m, const struct dataset *d, const uint32_t *order, uint32_t first,
		 uint64_t *rng)
{
	static float x[BATCH * N_IN];
	uint8_t labels[BATCH];
	int correct = 0;
	float loss;

	load_batch(d, order, first, x, labels, rng);
	loss = forward(m, x, labels, &correct);
	backward(m, x, labels);
	optimizer_step(m);
	return loss;
}

/* Loss and accuracy on d, in batches, without augmentation */
float evaluate(struct model *m, const struct dataset *d, float *accuracy)
{
	static float x[BATCH * N_IN];
	static uint8_t raw[BATCH * N_IN];
	uint32_t idx[BATCH], first, i;
	uint8_t labels[BATCH];
	float loss = 0;
	int correct = 0, batches = 0;

	for (first = 0; first + BATCH <= d->n; first += BATCH) {
		for (i = 0; i < BATCH; i++)
			idx[i] = first + i;
		gather_rows(d, idx, BATCH, raw, labels);
		normalize(raw, BATCH, x);
		loss += forward(m, x, labels, &correct);
		batches++;
	}
	*accuracy = (float)correct / (float)(batches * BATCH);
	return loss / (float)batches;
}

/* 10 classes that differ in a few pixels: a prototype is a shared random pattern with 1 pixel
 * in 8 flipped; a sample is its class's prototype plus strong noise */
static int dataset_make(struct dataset *train, struct dataset *test, uint64_t seed)
{
	static uint8_t proto[N_OUT][N_IN];
	struct dataset *sets[2] = { train, test };
	uint32_t sizes[2] = { N_TRAIN, N_TEST }, s, i;
	uint64_t rng = seed * 0x9E3779B97F4A7C15ULL + 1;
	int c, p, on;

	for (p = 0; p < N_IN; p++) {
		on = xorshift(&rng) % 4 == 0;
		for (c = 0; c < N_OUT; c++)
			proto[c][p] = (uint8_t)((on ^ (xorshift(&rng) % 8 == 0)) ? 170 : 70);
	}
	for (s = 0; s < 2; s++) {
		sets[s]->n = sizes[s];
		sets[s]->pixels = malloc((size_t)sizes[s] * N_IN);
		sets[s]->labels = malloc(sizes[s]);
		if (!sets[s]->pixels || !sets[s]->labels)
			return -ENOMEM;
		for (i = 0; i < sizes[s]; i++) {
			c = (int)(xorshift(&rng) % N_OUT);
			sets[s]->labels[i] = (uint8_t)c;
			for (p = 0; p < N_IN; p++)
				sets[s]->pixels[(size_t)i * N_IN + (size_t)p] =
					clamp_u8(proto[c][p] + (int)(xorshift(&rng) % 241) - 120);
		}
	}
	return 0;
}

static int layer_init(struct layer *l, int n_in, int n_out, uint64_t *rng)
{
	size_t nw = (size_t)n_in * (size_t)n_out, nb = (size_t)n_out, i;
	float scale = sqrtf(6.0f / (float)n_in); /* He-uniform, for ReLU */

	l->n_in = n_in;
	l->n_out = n_out;
	l->w = calloc(nw * 4 + nb * 4, sizeof(float));
	if (!l->w)
		return -ENOMEM;
	l->dw = l->w + nw;
	l->mw = l->dw + nw;
	l->vw = l->mw + nw;
	l->b = l->vw + nw;
	l->db = l->b + nb;
	l->mb = l->db + nb;
	l->vb = l->mb + nb;
	for (i = 0; i < nw; i++)
		l->w[i] = (uniform(rng) * 2.0f - 1.0f) * scale;
	return 0;
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: train_loop [--seconds S | --epochs N] [--seed N]\n"
		   "  --seconds S  train whole epochs until S seconds have passed (default 5)\n"
		   "  --epochs N   train exactly N epochs instead\n"
		   "  --seed N     seed of the data and the initial weights (default 1)\n");
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "epochs", required_argument, NULL, 'e' },
		{ "seed", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct model model;
	struct dataset train, test;
	uint32_t *order, first, i;
	double seconds = 5, start, epoch_start, last;
	long epochs = 0, epoch, seed = 1;
	float loss, eval_loss, accuracy;
	uint64_t rng;
	char *end;
	int c, steps;

	while ((c = getopt_long(argc, argv, "s:e:r:h", options, NULL)) != -1) {
		errno = 0;
		switch (c) {
		case 's':
			seconds = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(seconds > 0 && seconds < 1e6))
				goto bad_option;
			break;
		case 'e':
			epochs = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || epochs < 1 || epochs > 1000000)
				goto bad_option;
			break;
		case 'r':
			seed = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || seed < 0)
				goto bad_option;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 100;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 100;
	}

	rng = (uint64_t)seed * 0xD1B54A32D192ED03ULL + 7;
	order = malloc(sizeof(*order) * N_TRAIN);
	if (!order || dataset_make(&train, &test, (uint64_t)seed) ||
	    layer_init(&model.l1, N_IN, N_H1, &rng) || layer_init(&model.l2, N_H1, N_H2, &rng) ||
	    layer_init(&model.l3, N_H2, N_OUT, &rng)) {
		fprintf(stderr, "train_loop: unable to allocate: %s\n", strerror(ENOMEM));
		return 111;
	}
	for (i = 0; i < N_TRAIN; i++)
		order[i] = i;

	/* --seconds: whole epochs while the next one, as long as the last, still fits */
	start = now_seconds();
	last = 0;
	for (epoch = 1;
	     epochs ? epoch <= epochs : epoch == 1 || now_seconds() - start + last <= seconds;
	     epoch++) {
		epoch_start = now_seconds();
		shuffle_indices(order, N_TRAIN, &rng);
		loss = 0;
		steps = 0;
		for (first = 0; first + BATCH <= N_TRAIN; first += BATCH) {
			loss += train_step(&model, &train, order, first, &rng);
			steps++;
		}
		eval_loss = evaluate(&model, &test, &accuracy);
		last = now_seconds() - epoch_start;
		printf("epoch %ld: train loss %.4f, test loss %.4f, test accuracy %.1f %%, %.1f s\n",
		       epoch, loss / (float)steps, eval_loss, accuracy * 100.0f,
		       now_seconds() - start);
		fflush(stdout);
	}
	return 0;

bad_option:
	fprintf(stderr, "train_loop: unable to parse --%s: %s\n",
		options[c == 's' ? 0 :
			c == 'e' ? 1 :
				   2]
			.name,
		optarg);
	return 100;
}
