// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/shift_ft: any process maps the table read-only.
 *
 * The mapping is made without VM_MAYWRITE, so neither mmap(PROT_WRITE) nor a
 * later mprotect() can make it writable, whoever opened the file and with
 * whatever mode.  An open file (and so every mapping, which holds the file)
 * pins the module through fops.owner: unloading while the page is mapped is
 * refused (the module is in use) rather than leaving a mapping of freed
 * memory.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "chardev.h"
#include "compat.h"
#include "table.h"

/* Per open file: the generation this reader last acknowledged. */
struct sft_reader {
	u64 seen;
};

static int sft_open(struct inode *inode, struct file *file)
{
	struct sft_reader *r;

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	r->seen = sft_table_generation();
	file->private_data = r;
	/*
	 * With FMODE_LSEEK cleared here and no .llseek, lseek() fails with
	 * -ESPIPE on every kernel: no_llseek, which said the same, is gone
	 * since v6.12.
	 */
	return nonseekable_open(inode, file);
}

static int sft_release(struct inode *inode, struct file *file)
{
	kfree(file->private_data);
	return 0;
}

/* read(2) of 8 bytes: the current generation, which poll() then waits past. */
static ssize_t sft_read(struct file *file, char __user *buf, size_t len,
			loff_t *ppos)
{
	struct sft_reader *r = file->private_data;
	u64 gen;

	if (len < sizeof(gen))
		return -EINVAL;
	gen = sft_table_generation();
	if (copy_to_user(buf, &gen, sizeof(gen)))
		return -EFAULT;
	WRITE_ONCE(r->seen, gen);
	return sizeof(gen);
}

static __poll_t sft_poll(struct file *file, poll_table *wait)
{
	struct sft_reader *r = file->private_data;

	poll_wait(file, sft_table_waitq(), wait);
	if (sft_table_generation() != READ_ONCE(r->seen))
		return EPOLLIN | EPOLLRDNORM;
	return 0;
}

static int sft_mmap(struct file *file, struct vm_area_struct *vma)
{
	size_t len = vma->vm_end - vma->vm_start;

	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EPERM;
	if (vma->vm_pgoff || len > sft_table_map_size())
		return -EINVAL;
	sft_vma_clear_flags(vma, VM_MAYWRITE | VM_MAYEXEC);
	return remap_vmalloc_range(vma, sft_table_page(), 0);
}

/* Context: process, any user that could open the file. */
static long sft_ioctl_info(struct shift_ft_info __user *uinfo)
{
	struct shift_ft_info info;
	u32 usize;
	int err;

	if (get_user(usize, &uinfo->size))
		return -EFAULT;
	if (usize < SHIFT_FT_INFO_SIZE_VER0)
		return -EINVAL;
	/*
	 * copy_struct_from_user() checks that every byte beyond ours is zero:
	 * unbounded, a caller's size would make that a scan of up to 4 GiB.
	 * Like openat2() and clone3(), refuse what no struct will ever need.
	 */
	if (usize > SHIFT_FT_INFO_SIZE_MAX)
		return -E2BIG;
	err = copy_struct_from_user(&info, sizeof(info), uinfo, usize);
	if (err)
		return err;
	if (info.flags)
		return -EOPNOTSUPP;

	memset(&info, 0, sizeof(info));
	info.size = min_t(u32, usize, sizeof(info));
	info.page_version = SHIFT_FT_PAGE_VERSION;
	info.page_compat_version = SHIFT_FT_PAGE_COMPAT_VERSION;
	info.map_size = sft_table_map_size();
	info.port_max = sft_table_port_max();
	info.path_max = sft_table_path_max();
	info.generation = sft_table_generation();
	if (copy_to_user(uinfo, &info, info.size))
		return -EFAULT;
	return 0;
}

static long sft_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	switch (cmd) {
	case SHIFT_FT_IOC_INFO:
		return sft_ioctl_info((struct shift_ft_info __user *)arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations sft_fops = {
	.owner		= THIS_MODULE,
	.open		= sft_open,
	.release	= sft_release,
	.read		= sft_read,
	.poll		= sft_poll,
	.mmap		= sft_mmap,
	.unlocked_ioctl	= sft_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};

static struct miscdevice sft_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "shift_ft",
	.fops	= &sft_fops,
	.mode	= 0444,
};

int __init sft_chardev_init(void)
{
	return misc_register(&sft_misc);
}

void sft_chardev_exit(void)
{
	misc_deregister(&sft_misc);
}
