"""The App (issue 6): installations, deliveries, pulls, runs, commands, refusals (bot.app_models).

Revision ID: 0002_app
Revises: 0001_history
Create Date: 2026-11-30 00:23:04.291827
"""

from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = '0002_app'
down_revision = '0001_history'
branch_labels = None
depends_on = None

def upgrade() -> None:

    op.create_table('app_commands',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('repository', sa.String(length=200), nullable=False),
    sa.Column('comment_id', sa.BigInteger(), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('login', sa.String(length=100), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_app_commands')),
    sa.UniqueConstraint('repository', 'comment_id', name=op.f('uq_app_commands_repository_comment_id'))
    )
    op.create_table('app_deliveries',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('delivery_id', sa.String(length=100), nullable=False),
    sa.Column('event', sa.String(length=64), nullable=False),
    sa.Column('action', sa.String(length=64), nullable=True),
    sa.Column('installation_id', sa.BigInteger(), nullable=True),
    sa.Column('repository', sa.String(length=200), nullable=True),
    sa.Column('payload', sa.JSON(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('received_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_app_deliveries')),
    sa.UniqueConstraint('delivery_id', name=op.f('uq_app_deliveries_delivery_id'))
    )
    op.create_table('app_installations',
    sa.Column('id', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('account', sa.String(length=200), nullable=True),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_app_installations'))
    )
    op.create_table('app_pulls',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('repository', sa.String(length=200), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('head_sha', sa.String(length=64), nullable=True),
    sa.Column('base_sha', sa.String(length=64), nullable=True),
    sa.Column('is_fork', sa.Boolean(), nullable=False),
    sa.Column('labeled', sa.Boolean(), nullable=False),
    sa.Column('approved_sha', sa.String(length=64), nullable=True),
    sa.Column('comment_id', sa.BigInteger(), nullable=True),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_app_pulls')),
    sa.UniqueConstraint('repository', 'number', name=op.f('uq_app_pulls_repository_number'))
    )
    op.create_table('app_refusals',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('repository', sa.String(length=200), nullable=False),
    sa.Column('pr_number', sa.Integer(), nullable=False),
    sa.Column('login', sa.String(length=100), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_app_refusals')),
    sa.UniqueConstraint('repository', 'pr_number', 'login', name=op.f('uq_app_refusals_repository_pr_number_login'))
    )
    op.create_table('app_runs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=40), nullable=False),
    sa.Column('repository', sa.String(length=200), nullable=False),
    sa.Column('installation_id', sa.BigInteger(), nullable=True),
    sa.Column('pr_number', sa.Integer(), nullable=True),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('trigger', sa.String(length=32), nullable=False),
    sa.Column('requested_by', sa.String(length=100), nullable=True),
    sa.Column('base_sha', sa.String(length=64), nullable=True),
    sa.Column('head_sha', sa.String(length=64), nullable=False),
    sa.Column('base_ref', sa.String(length=300), nullable=True),
    sa.Column('head_ref', sa.String(length=300), nullable=True),
    sa.Column('filter', sa.String(length=500), nullable=True),
    sa.Column('rounds', sa.Integer(), nullable=True),
    sa.Column('threshold', sa.Double(), nullable=True),
    sa.Column('profile', sa.Boolean(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('conclusion', sa.String(length=32), nullable=True),
    sa.Column('headline', sa.Text(), nullable=True),
    sa.Column('check_run_id', sa.BigInteger(), nullable=True),
    sa.Column('workflow_run_id', sa.BigInteger(), nullable=True),
    sa.Column('workflow_run_url', sa.String(length=500), nullable=True),
    sa.Column('result_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('completed_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['result_id'], ['results.id'], name=op.f('fk_app_runs_result_id_results'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_app_runs')),
    sa.UniqueConstraint('key', name=op.f('uq_app_runs_key'))
    )
    with op.batch_alter_table('app_runs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_app_runs_repository'), ['repository'], unique=False)
        batch_op.create_index(batch_op.f('ix_app_runs_workflow_run_id'), ['workflow_run_id'], unique=False)

def downgrade() -> None:

    with op.batch_alter_table('app_runs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_app_runs_workflow_run_id'))
        batch_op.drop_index(batch_op.f('ix_app_runs_repository'))

    op.drop_table('app_runs')
    op.drop_table('app_refusals')
    op.drop_table('app_pulls')
    op.drop_table('app_installations')
    op.drop_table('app_deliveries')
    op.drop_table('app_commands')

