// SPDX-License-Identifier: GPL-2.0
/*
 * shift_ft: the per-host RDMA NIC health table.
 *
 * Init builds the pieces inside out (table, netlink, char device, then the
 * ib client that feeds them) and exit takes them down in reverse, so that
 * every device removal at unload is still announced and still reaches the
 * page.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>

#include "chardev.h"
#include "client.h"
#include "netlink.h"
#include "table.h"
#include "version.h"

#define SFT_PORT_LIMIT	4096
#define SFT_PATH_LIMIT	65536

static unsigned int max_ports = 64;
module_param(max_ports, uint, 0444);
MODULE_PARM_DESC(max_ports,
		 "RDMA ports the table tracks, 1-4096 (default 64); ports beyond are logged and not tracked");

static unsigned int max_paths = 1024;
module_param(max_paths, uint, 0444);
MODULE_PARM_DESC(max_paths,
		 "Rows of the path table, 1-65536 (default 1024); a report beyond fails with ENOSPC");

/*
 * -1: a quarter of max_paths.  Rows that only reports with
 * SHIFT_FT_REPORT_F_WITHDRAW (libshiftu's) may take, so that agents and
 * other long-lived reporters cannot fill the table against the host's own
 * applications (uapi/shift_ft.h).
 */
static int reserved_paths = -1;
module_param(reserved_paths, int, 0444);
MODULE_PARM_DESC(reserved_paths,
		 "Free path rows kept for reports with F_WITHDRAW (libshiftu's), 0 to max_paths-1 (default -1: a quarter of max_paths)");

static int __init sft_init(void)
{
	int err;

	if (!max_ports || max_ports > SFT_PORT_LIMIT ||
	    !max_paths || max_paths > SFT_PATH_LIMIT) {
		pr_err("max_ports must be 1-%u and max_paths 1-%u\n",
		       SFT_PORT_LIMIT, SFT_PATH_LIMIT);
		return -EINVAL;
	}
	if (reserved_paths < 0)
		reserved_paths = max_paths / 4;
	if (reserved_paths >= max_paths) {
		pr_err("reserved_paths must be below max_paths (%u)\n", max_paths);
		return -EINVAL;
	}

	err = sft_table_init(max_ports, max_paths, reserved_paths);
	if (err)
		goto err_table;
	err = sft_nl_init();
	if (err)
		goto err_netlink;
	err = sft_chardev_init();
	if (err)
		goto err_chardev;
	err = sft_client_init();
	if (err)
		goto err_client;

	pr_info("version %s loaded (max_ports=%u max_paths=%u reserved_paths=%d)\n",
		SHIFT_VERSION, max_ports, max_paths, reserved_paths);
	return 0;

err_client:
	sft_chardev_exit();
err_chardev:
	sft_nl_exit();
err_netlink:
	sft_table_exit();
err_table:
	return err;
}

static void __exit sft_exit(void)
{
	sft_client_exit();
	sft_chardev_exit();
	sft_nl_exit();
	sft_table_exit();
}

module_init(sft_init);
module_exit(sft_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("The shift authors");
MODULE_DESCRIPTION("RDMA NIC health table for transparent failover");
MODULE_VERSION(SHIFT_VERSION);
