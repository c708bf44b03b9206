"""Steps: a delivery's decided ``plan`` and how many of its actions are done (``step``,
``attempts``), when it was last queued (``queued_at``), a run's dispatch marks (``dispatch_started_at``, ``dispatched_at``), and
``app_locks`` (per-PR leases), so a retried job resumes where it stopped and jobs of one PR run
one at a time.

Revision ID: 0004_steps
Revises: 0003_authority
Create Date: 2026-11-30 21:30:00
"""

from __future__ import annotations

from alembic import op
import sqlalchemy as sa


revision = '0004_steps'
down_revision = '0003_authority'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('app_deliveries', schema=None) as batch_op:
        batch_op.add_column(sa.Column('plan', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('step', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('attempts', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('queued_at', sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table('app_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('dispatch_started_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('dispatched_at', sa.DateTime(timezone=True), nullable=True))
    op.create_table('app_locks',
                    sa.Column('name', sa.String(length=250), nullable=False),
                    sa.Column('holder', sa.String(length=64), nullable=False),
                    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
                    sa.PrimaryKeyConstraint('name'))


def downgrade() -> None:
    op.drop_table('app_locks')
    with op.batch_alter_table('app_runs', schema=None) as batch_op:
        batch_op.drop_column('dispatched_at')
        batch_op.drop_column('dispatch_started_at')
    with op.batch_alter_table('app_deliveries', schema=None) as batch_op:
        batch_op.drop_column('queued_at')
        batch_op.drop_column('attempts')
        batch_op.drop_column('step')
        batch_op.drop_column('plan')
