// SPDX-License-Identifier: GPL-2.0
/*
 * uapi_layout: the released ABI of uapi/shift_ft.h does not move.
 *
 * Offsets and sizes of the page and ioctl structures, and the numbers of
 * commands, attributes and enums, are what readers built against version 1
 * rely on; only additions at the end are allowed.
 */
#include <stddef.h>
#include <string.h>
#include <shift_ft.h>

#include "kselftest_harness.h"

TEST(page_header)
{
	ASSERT_EQ(0, offsetof(struct shift_ft_page_hdr, magic));
	ASSERT_EQ(4, offsetof(struct shift_ft_page_hdr, version));
	ASSERT_EQ(6, offsetof(struct shift_ft_page_hdr, compat_version));
	ASSERT_EQ(8, offsetof(struct shift_ft_page_hdr, hdr_size));
	ASSERT_EQ(12, offsetof(struct shift_ft_page_hdr, seq));
	ASSERT_EQ(16, offsetof(struct shift_ft_page_hdr, generation));
	ASSERT_EQ(24, offsetof(struct shift_ft_page_hdr, features));
	ASSERT_EQ(32, offsetof(struct shift_ft_page_hdr, port_offset));
	ASSERT_EQ(48, offsetof(struct shift_ft_page_hdr, path_offset));
	ASSERT_EQ(64, offsetof(struct shift_ft_page_hdr, map_size));
	ASSERT_EQ(136, sizeof(struct shift_ft_page_hdr));
	/* "SHFT" as bytes in memory on a little-endian host */
	ASSERT_EQ(0, memcmp("SHFT", &(__u32){ SHIFT_FT_PAGE_MAGIC }, 4));
}

TEST(port_row)
{
	ASSERT_EQ(0, offsetof(struct shift_ft_page_port, flags));
	ASSERT_EQ(16, offsetof(struct shift_ft_page_port, node_guid));
	ASSERT_EQ(24, offsetof(struct shift_ft_page_port, dev_name));
	ASSERT_EQ(88, offsetof(struct shift_ft_page_port, netdev));
	ASSERT_EQ(104, offsetof(struct shift_ft_page_port, link_layer));
	ASSERT_EQ(105, offsetof(struct shift_ft_page_port, state));
	ASSERT_EQ(120, offsetof(struct shift_ft_page_port, last_change_ns));
	ASSERT_EQ(128, offsetof(struct shift_ft_page_port, down_count));
	ASSERT_EQ(148, offsetof(struct shift_ft_page_port, backup_index));
	ASSERT_EQ(152, offsetof(struct shift_ft_page_port, pair_state));
	ASSERT_EQ(156, offsetof(struct shift_ft_page_port, pair_flags));
	ASSERT_EQ(192, sizeof(struct shift_ft_page_port));
}

TEST(path_row)
{
	ASSERT_EQ(8, offsetof(struct shift_ft_page_path, remote_gid));
	ASSERT_EQ(24, offsetof(struct shift_ft_page_path, state));
	ASSERT_EQ(28, offsetof(struct shift_ft_page_path, report_pid));
	ASSERT_EQ(32, offsetof(struct shift_ft_page_path, report_ns));
	ASSERT_EQ(72, sizeof(struct shift_ft_page_path));
}

TEST(ioctl_info)
{
	ASSERT_EQ(SHIFT_FT_INFO_SIZE_VER0, offsetof(struct shift_ft_info, reserved));
	ASSERT_EQ(72, sizeof(struct shift_ft_info));
	ASSERT_EQ(0xc048f701, SHIFT_FT_IOC_INFO);
}

TEST(numbers)
{
	ASSERT_EQ(11, SHIFT_FT_CMD_PATH_REPORT);
	ASSERT_EQ(SHIFT_FT_CMD_PATH_REPORT, SHIFT_FT_CMD_MAX);
	ASSERT_EQ(35, SHIFT_FT_A_EVENT);
	ASSERT_EQ(36, SHIFT_FT_A_EVENT_COUNTS);
	ASSERT_EQ(SHIFT_FT_A_EVENT_COUNTS, SHIFT_FT_A_MAX);
	ASSERT_EQ(4, SHIFT_FT_PORT_ACTIVE);
	ASSERT_EQ(4, SHIFT_FT_PAIR_BOTH_DOWN);
	ASSERT_EQ(2, SHIFT_FT_PATH_DOWN);
	ASSERT_EQ(3, SHIFT_FT_SRC_AGENT);
	ASSERT_EQ(14, SHIFT_FT_EV_PATH_DELETE);
	ASSERT_EQ(15, SHIFT_FT_EV_REPORTER_GONE);
	ASSERT_EQ(SHIFT_FT_EV_REPORTER_GONE, SHIFT_FT_EV_MAX);
	ASSERT_EQ(2, SHIFT_FT_REPORT_F_WITHDRAW);
}

TEST_HARNESS_MAIN
