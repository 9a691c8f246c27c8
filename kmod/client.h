/* SPDX-License-Identifier: GPL-2.0 */
/* The ib_client: follows every RDMA device and its ports' events. */
#ifndef _SFT_CLIENT_H
#define _SFT_CLIENT_H

int sft_client_init(void);
void sft_client_exit(void);

#endif /* _SFT_CLIENT_H */
