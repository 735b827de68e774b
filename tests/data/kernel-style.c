// SPDX-License-Identifier: MIT
/*
 * kernel-style.c - a small ring buffer driver in the Linux kernel's style,
 * written for ramtrace's tests (tokenizer round trips, spm_encode
 * agreement, bits per byte).  It is not kernel code and is not built.
 *
 * Copyright (c) 2026 the ramtrace authors
 */

#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/uaccess.h>

#define RB_DEFAULT_ORDER	12
#define RB_MAX_READERS		8
#define RB_FLAG_OVERWRITE	BIT(0)
#define RB_FLAG_BLOCKING	BIT(1)

struct rb_reader {
	struct list_head	node;
	unsigned long		pos;
	unsigned int		id;
	bool			active;
};

struct rb_dev {
	spinlock_t		lock;
	wait_queue_head_t	waitq;
	u8			*buf;
	unsigned long		size;
	unsigned long		head;
	unsigned long		tail;
	unsigned int		flags;
	unsigned int		nr_readers;
	struct list_head	readers;
	atomic_t		dropped;
};

static unsigned int order = RB_DEFAULT_ORDER;
module_param(order, uint, 0444);
MODULE_PARM_DESC(order, "log2 of the buffer size in bytes (default 12)");

static inline unsigned long rb_used(const struct rb_dev *rb)
{
	return rb->head - rb->tail;
}

static inline unsigned long rb_free(const struct rb_dev *rb)
{
	return rb->size - rb_used(rb);
}

/**
 * rb_alloc() - allocate a ring buffer of 2^@order bytes
 * @order: log2 of the size
 * @flags: RB_FLAG_* bits
 *
 * Return: the new buffer, or ERR_PTR(-ENOMEM).
 */
static struct rb_dev *rb_alloc(unsigned int order, unsigned int flags)
{
	struct rb_dev *rb;

	if (order < PAGE_SHIFT || order > 24)
		return ERR_PTR(-EINVAL);

	rb = kzalloc(sizeof(*rb), GFP_KERNEL);
	if (!rb)
		return ERR_PTR(-ENOMEM);

	rb->buf = kvmalloc(1UL << order, GFP_KERNEL);
	if (!rb->buf) {
		kfree(rb);
		return ERR_PTR(-ENOMEM);
	}
	rb->size = 1UL << order;
	rb->flags = flags;
	spin_lock_init(&rb->lock);
	init_waitqueue_head(&rb->waitq);
	INIT_LIST_HEAD(&rb->readers);
	atomic_set(&rb->dropped, 0);
	return rb;
}

static void rb_release(struct rb_dev *rb)
{
	struct rb_reader *r, *tmp;

	list_for_each_entry_safe(r, tmp, &rb->readers, node) {
		list_del(&r->node);
		kfree(r);
	}
	kvfree(rb->buf);
	kfree(rb);
}

static int rb_write(struct rb_dev *rb, const u8 *data, size_t len)
{
	unsigned long flags;
	size_t i;
	int ret = 0;

	if (!len)
		return 0;

	spin_lock_irqsave(&rb->lock, flags);
	if (len > rb_free(rb)) {
		if (!(rb->flags & RB_FLAG_OVERWRITE)) {
			atomic_inc(&rb->dropped);
			ret = -ENOSPC;
			goto out_unlock;
		}
		rb->tail += len - rb_free(rb);
	}
	for (i = 0; i < len; i++)
		rb->buf[(rb->head + i) & (rb->size - 1)] = data[i];
	rb->head += len;
	ret = len;

out_unlock:
	spin_unlock_irqrestore(&rb->lock, flags);
	if (ret > 0)
		wake_up_interruptible(&rb->waitq);
	return ret;
}

static ssize_t rb_read_user(struct rb_dev *rb, char __user *ubuf, size_t count)
{
	unsigned long flags, n, off;
	u8 tmp[64];
	ssize_t done = 0;
	int err;

	if (rb->flags & RB_FLAG_BLOCKING) {
		err = wait_event_interruptible(rb->waitq, rb_used(rb) > 0);
		if (err)
			return err;
	}

	while (done < count) {
		spin_lock_irqsave(&rb->lock, flags);
		n = min_t(unsigned long, rb_used(rb), sizeof(tmp));
		n = min_t(unsigned long, n, count - done);
		for (off = 0; off < n; off++)
			tmp[off] = rb->buf[(rb->tail + off) & (rb->size - 1)];
		rb->tail += n;
		spin_unlock_irqrestore(&rb->lock, flags);

		if (!n)
			break;
		if (copy_to_user(ubuf + done, tmp, n))
			return -EFAULT;
		done += n;
	}
	return done;
}

static struct rb_dev *the_rb;

static int __init rb_init(void)
{
	the_rb = rb_alloc(order, RB_FLAG_OVERWRITE);
	if (IS_ERR(the_rb)) {
		pr_err("rb: cannot allocate %lu bytes\n", 1UL << order);
		return PTR_ERR(the_rb);
	}
	pr_info("rb: %lu byte ring buffer ready\n", the_rb->size);
	return 0;
}

static void __exit rb_exit(void)
{
	pr_info("rb: %d writes dropped\n", atomic_read(&the_rb->dropped));
	rb_release(the_rb);
}

module_init(rb_init);
module_exit(rb_exit);
MODULE_DESCRIPTION("Example ring buffer");
MODULE_LICENSE("Dual MIT/GPL");
