"""Authority: ``app_pulls.head_seen_at`` (when a pull_request event first showed the current
head; a fork's ``/perf run`` must be written after it) and ``repositories.private`` (GitHub's
visibility, for who may read the pages).

Revision ID: 0003_authority
Revises: 0002_app
Create Date: 2026-11-30 16:00:00
"""

from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = '0003_authority'
down_revision = '0002_app'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('app_pulls', schema=None) as batch_op:
        batch_op.add_column(sa.Column('head_seen_at', sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table('repositories', schema=None) as batch_op:
        batch_op.add_column(sa.Column('private', sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('repositories', schema=None) as batch_op:
        batch_op.drop_column('private')
    with op.batch_alter_table('app_pulls', schema=None) as batch_op:
        batch_op.drop_column('head_seen_at')
